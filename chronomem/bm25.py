"""FTS5's BM25 in Python, the one copy the in-memory indexes score with.

:mod:`chronomem.lexindex` (descriptors) and :mod:`chronomem.itemindex`
(S(HEAD)'s items) keep postings their own way and hand them here; the PostgreSQL
backend evaluates the same formula in SQL (:mod:`chronomem.pg.lexical`, where
the formula is written out), and ``tests/test_memory_bm25.py`` checks that the two
agree. Everything follows FTS5's ``fts5Bm25Function`` in its operation order, in
float64, so scores equal the backends' to the last bit. The logarithm is
``math.log`` (the C library's, as FTS5 calls it), never numpy's: its AVX-512 log differs
from it in the last bit on some inputs (58 of 240k measured), which would make
rankings depend on the CPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

K1, B = 1.2, 0.75  # FTS5's bm25 constants

Posting = tuple[np.ndarray, np.ndarray]  # (document rows ascending, tf float64)


def length_norm(dlen: np.ndarray, avgdl: float) -> np.ndarray:
    """``k1 * (1 - b + b * |D| / avgdl)`` per document."""
    return K1 * (1 - B + B * dlen / avgdl)


def idf(n_docs: int, n_hit: int) -> float:
    """``ln((N - n + 0.5) / (n + 0.5))``, or 1e-6 where that is not positive (FTS5)."""
    value = math.log((float(n_docs) - float(n_hit) + 0.5) / (float(n_hit) + 0.5))
    return 1e-6 if value <= 0.0 else value


def score(
    size: int,
    present: Sequence[Posting | None],
    hits: Sequence[int],
    n_docs: int,
    norm: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, scores) of every one of ``size`` documents holding a query term, in row
    order. ``present``: each term's posting (None: no document here holds it);
    ``hits``: the backend's count of documents holding each term; ``norm``: the
    documents' :func:`length_norm`. Terms are summed in query order, as FTS5 sums its
    phrases (a document a term misses adds 0.0)."""
    total = np.zeros(size, dtype=np.float64)
    hit = np.zeros(size, dtype=bool)
    for posting, n_hit in zip(present, hits, strict=True):
        if posting is None:
            continue
        weight = idf(n_docs, n_hit)
        docs, tf = posting
        total[docs] += weight * ((tf * (K1 + 1.0)) / (tf + norm[docs]))
        hit[docs] = True
    rows = np.flatnonzero(hit)
    return rows, total[rows]


def best_order(rows: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best ``scores``, best first, ties to the lower row."""
    if rows.size == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, rows.size)
    if k < rows.size:
        # argpartition cannot break ties by row, so keep every score >= the k-th best
        kth = np.partition(-scores, k - 1)[k - 1]
        keep = np.flatnonzero(-scores <= kth)
    else:
        keep = np.arange(rows.size)
    return keep[np.lexsort((rows[keep], -scores[keep]))][:k]
