"""An in-memory copy of a scope's lexical descriptor index, scored with FTS5's BM25.

Why: the backends' lexical stage (SQLite FTS5 ``bm25()``, or the same formula in SQL on
PostgreSQL) scores every matching descriptor, one row at a time, so it grows linearly
with history (measured: 4.5 ms at 10k writes, 80 ms at 100k for a three-word request).
Here each visible descriptor's term frequencies and length are held in numpy arrays
per term (built once per scope generation, like the dense matrix), and a request
costs a few vectorised operations over its terms' postings plus one statistics lookup
in the backend (:meth:`~chronobench.memory.backend.Backend.descriptor_stats`: document
count, token total and the documents holding each term, counted as the backend's own
BM25 counts them).

The score is the backend's to the last bit: tokens come from FTS5's own tokenizer
(:class:`Fts5Tokenizer`), and the formula is evaluated in FTS5's operation order in
float64 (see :mod:`chronobench.memory.pg.lexical` for the formula). A request with a
quoted term that the tokenizer splits into several tokens (``foo_bar``: an FTS5
phrase) or into none goes to the backend instead.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

TOKENIZE = "porter unicode61 remove_diacritics 2"  # the SQLite backend's FTS5 tokenizer
K1, B = 1.2, 0.75  # FTS5's bm25 constants


class Fts5Tokenizer:
    """FTS5's tokenizer, run on an in-memory SQLite table (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5 (body, tokenize = '{TOKENIZE}')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's tokens, in order, as FTS5 indexes them."""
        if not texts:
            return []
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT INTO t (rowid, body) VALUES (?, ?)", list(enumerate(texts))
                )
                rows = self._conn.execute(
                    "SELECT doc, offset, term FROM v ORDER BY doc, offset"
                ).fetchall()
            finally:
                self._conn.execute("ROLLBACK")
        out: list[list[str]] = [[] for _ in texts]
        for doc, _, term in rows:
            out[doc].append(term)
        return out

    def counts(self, texts: Sequence[str]) -> tuple[list[tuple[str, int, int]], list[int]]:
        """``[(term, text index, occurrences)]`` sorted by term then text, and each
        text's token count: what an index of ``texts`` holds."""
        if not texts:
            return [], []
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT INTO t (rowid, body) VALUES (?, ?)", list(enumerate(texts))
                )
                rows = self._conn.execute(
                    "SELECT term, doc, count(*) FROM v GROUP BY term, doc"
                ).fetchall()
            finally:
                self._conn.execute("ROLLBACK")
        lengths = [0] * len(texts)
        for _, doc, n in rows:
            lengths[doc] += n
        return rows, lengths

    def postings(self, texts: Sequence[str]) -> list[tuple[dict[str, list[int]], int]]:
        """Per text: ({term: positions}, number of tokens)."""
        out = []
        for toks in self.tokens(texts):
            terms: dict[str, list[int]] = {}
            for pos, term in enumerate(toks):
                terms.setdefault(term, []).append(pos)
            out.append((terms, len(toks)))
        return out

    def phrases(self, terms: Sequence[str]) -> list[list[str]]:
        """The token sequence FTS5 makes of each quoted query term (maybe empty)."""
        return self.tokens(list(terms))


_TOKENIZER: Fts5Tokenizer | None = None
_TOKENIZER_LOCK = threading.Lock()


def tokenizer() -> Fts5Tokenizer:
    """The process-wide tokenizer."""
    global _TOKENIZER
    with _TOKENIZER_LOCK:
        if _TOKENIZER is None:
            _TOKENIZER = Fts5Tokenizer()
        return _TOKENIZER


@dataclass(frozen=True)
class LexicalIndex:
    """A scope's visible descriptors at generation ``gen``, in history order."""

    gen: int
    vids: np.ndarray  # version id per document, in seq order
    dlen: np.ndarray  # float64 |D|: body tokens + the scope tag's one token, as FTS5 counts
    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # term -> (document rows, tf float64)
    state: tuple[Any, ...] = ()  # what, besides appended commits, would change the documents
    last_seq: int = -1  # the last document's seq
    _norm: dict[str, tuple[float, np.ndarray]] = field(default_factory=dict, compare=False)

    def norm(self, avgdl: float) -> np.ndarray:
        """``k1 * (1 - b + b * |D| / avgdl)`` per document (kept for the last ``avgdl``)."""
        last = self._norm.get("avgdl")
        if last is None or last[0] != avgdl:
            last = (avgdl, K1 * (1 - B + B * self.dlen / avgdl))
            self._norm["avgdl"] = last
        return last[1]

    def row_of(self) -> dict[int, int]:
        """Version id -> document row."""
        return {int(v): i for i, v in enumerate(self.vids)}


def build(
    gen: int,
    vids: Sequence[int],
    bodies: Sequence[str],
    state: tuple[Any, ...] = (),
    last_seq: int = -1,
    base: LexicalIndex | None = None,
) -> LexicalIndex:
    """The index of ``bodies`` (one per version id in ``vids``, history order), appended
    to ``base`` when given (its documents come first)."""
    rows, lengths = tokenizer().counts(list(bodies))
    offset = 0 if base is None else int(base.vids.size)
    postings: dict[str, tuple[np.ndarray, np.ndarray]] = {} if base is None else dict(base.postings)
    if rows:
        terms = [r[0] for r in rows]
        docs = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)) + offset
        tfs = np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows))
        # rows come sorted by term: cut the arrays where the term changes
        cuts = [0] + [i for i in range(1, len(terms)) if terms[i] != terms[i - 1]] + [len(terms)]
        for a, b in zip(cuts, cuts[1:], strict=False):
            term, new = terms[a], (docs[a:b], tfs[a:b])
            old = postings.get(term)
            postings[term] = (
                new
                if old is None
                else tuple(  # type: ignore[assignment]
                    np.concatenate([o, n]) for o, n in zip(old, new, strict=True)
                )
            )
    dlen = np.asarray(lengths, dtype=np.float64) + 1.0
    ids = np.asarray(list(vids), dtype=np.int64)
    if base is not None:
        dlen, ids = np.concatenate([base.dlen, dlen]), np.concatenate([base.vids, ids])
    return LexicalIndex(gen, ids, dlen, postings, state, last_seq)


def single_tokens(terms: Sequence[str]) -> list[str] | None:
    """The one token FTS5 makes of each quoted term, or None when some term makes
    several (a phrase) or none (then the backend scores the request itself)."""
    phrases = tokenizer().phrases(list(terms))
    if not phrases or any(len(p) != 1 for p in phrases):
        return None
    return [p[0] for p in phrases]


def score(
    ix: LexicalIndex, tokens: Sequence[str], n_docs: int, n_tokens: int, hits: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(document rows, scores) of every document holding a token, in row order.

    ``n_docs``, ``n_tokens`` (all columns) and ``hits`` (documents holding each token)
    are the backend's statistics; the arithmetic follows FTS5's ``fts5Bm25Function``.
    """
    present = [ix.postings.get(t) for t in tokens]
    if not any(p is not None for p in present):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    norm = ix.norm(float(n_tokens) / float(max(n_docs, 1)))
    total = np.zeros(ix.vids.size, dtype=np.float64)
    hit = np.zeros(ix.vids.size, dtype=bool)
    for posting, n_hit in zip(present, hits, strict=True):
        if posting is None:
            continue
        idf = float(np.log((float(n_docs) - float(n_hit) + 0.5) / (float(n_hit) + 0.5)))
        if idf <= 0.0:
            idf = 1e-6
        docs, tf = posting
        # phrase by phrase, as FTS5 sums them (a document a phrase misses adds 0.0)
        total[docs] += idf * ((tf * (K1 + 1.0)) / (tf + norm[docs]))
        hit[docs] = True
    rows = np.flatnonzero(hit)
    return rows, total[rows]


def top_k(
    ix: LexicalIndex, rows: np.ndarray, scores: np.ndarray, k: int
) -> list[tuple[int, float]]:
    """The ``k`` best ``(version id, score)``, ties in history order (row order)."""
    if rows.size == 0 or k <= 0:
        return []
    k = min(k, rows.size)
    if k < rows.size:
        # argpartition cannot break ties by row, so keep every score >= the k-th best
        kth = np.partition(-scores, k - 1)[k - 1]
        keep = np.flatnonzero(-scores <= kth)
    else:
        keep = np.arange(rows.size)
    order = keep[np.lexsort((rows[keep], -scores[keep]))][:k]
    return [(int(ix.vids[rows[i]]), float(scores[i])) for i in order]


def change_state(db: Any, scope_id: int) -> tuple[Any, ...]:
    """What changes a scope's visible descriptors other than a commit appending one: its
    discarded seq ranges (truncate rollbacks) and its redactions (rewritten bodies)."""
    hidden = db.conn.execute(
        "SELECT lo, hi FROM hidden WHERE scope_id = ? ORDER BY hi", (scope_id,)
    ).fetchall()
    redacts = db.conn.execute(
        "SELECT count(*) FROM audit WHERE scope_id = ? AND action = 'redact'", (scope_id,)
    ).fetchone()[0]
    return (tuple((int(a), int(b)) for a, b in hidden), int(redacts))


class LexicalCache:
    """Per-scope :class:`LexicalIndex`, rebuilt when the scope's ``gen`` moves."""

    def __init__(self) -> None:
        self._by_scope: dict[int, LexicalIndex] = {}
        self._lock = threading.Lock()

    def copy(self) -> LexicalCache:
        """A cache sharing the (immutable) indexes, for cloned stores."""
        other = LexicalCache()
        other._by_scope = dict(self._by_scope)
        return other

    def get(self, db: Any, scope_id: int, gen: int) -> LexicalIndex:
        """The scope's index at generation ``gen``: the cached one when current; extended
        with the versions committed since when only commits happened (no truncate, no
        redaction: the ``state`` of :func:`change_state` is the same); else rebuilt."""
        with self._lock:
            hit = self._by_scope.get(scope_id)
        if hit is not None and hit.gen == gen:
            return hit
        state = change_state(db, scope_id)
        base = hit if hit is not None and hit.state == state else None
        vids, seqs, bodies = db.descriptor_docs(scope_id, -1 if base is None else base.last_seq)
        last = seqs[-1] if seqs else (-1 if base is None else base.last_seq)
        built = build(gen, vids, bodies, state, last, base)
        with self._lock:
            self._by_scope[scope_id] = built
        return built

    def drop(self, scope_id: int | None = None) -> None:
        """Forget one scope's index (or all)."""
        with self._lock:
            if scope_id is None:
                self._by_scope.clear()
            else:
                self._by_scope.pop(scope_id, None)


def match(
    db: Any, ix: LexicalIndex, scope_id: int, terms: Sequence[str], k: int
) -> list[tuple[int, float]] | None:
    """What ``db.match_descriptors(scope_id, terms, k)`` returns, from the index; None
    when the request has a term the index cannot score alone (see :func:`single_tokens`)."""
    if k <= 0 or not terms:
        return []
    toks = single_tokens(terms)
    if toks is None:
        return None
    n_docs, n_tokens, hits = db.descriptor_stats(scope_id, toks)
    rows, scores = score(ix, toks, n_docs, n_tokens, hits)
    return top_k(ix, rows, scores, k)


def scores_of(
    db: Any, ix: LexicalIndex, scope_id: int, terms: Sequence[str], version_ids: Iterable[int]
) -> dict[int, float | None] | None:
    """What ``db.descriptor_scores`` returns for visible versions, from the index (None:
    as for :func:`match`). A version the index does not hold gets None."""
    vids = [int(v) for v in version_ids]
    toks = single_tokens(terms) if terms else []
    if toks is None:
        return None
    out: dict[int, float | None] = dict.fromkeys(vids)
    if not toks:
        return out
    n_docs, n_tokens, hits = db.descriptor_stats(scope_id, toks)
    rows, scores = score(ix, toks, n_docs, n_tokens, hits)
    at = dict(zip(rows.tolist(), scores.tolist(), strict=True))
    row_of = ix.row_of()
    for v in vids:
        r = row_of.get(v)
        if r is not None and r in at:
            out[v] = float(at[r])
    return out
