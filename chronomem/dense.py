"""The dense stage's data: each scope's matrix of descriptor-window vectors, and its search.

A version's dense score is the maximum cosine over the vectors of its descriptor
windows, so a long descriptor is represented in full instead of being truncated at
the embedder's window. :class:`DenseCache` keeps one matrix per scope for the
scope's ``gen``; :func:`dense` ranks versions against one query vector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from chronomem import lexindex as lx
from chronomem.backend import Backend
from chronomem.embedders import SCORE_DECIMALS, rounded, similarities
from chronomem.scope_cache import ScopeCache


@dataclass(frozen=True)
class DenseMatrix:
    gen: int
    vids: np.ndarray  # version id per version, in seq order
    starts: np.ndarray  # first chunk row of each version
    matrix: np.ndarray  # (n_chunks, dim) float64 (exact float32 values), rows unit
    state: tuple[Any, ...] = ()  # lexindex.change_state when built
    last_seq: int = -1  # the last version's seq
    seqs: np.ndarray | None = None  # seq per version
    matrix32: np.ndarray | None = None  # the same rows in float32 (the prefilter's copy)


def _versions(owners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(version ids, first rows) of an owner-per-row array (rows grouped by owner)."""
    if not owners.size:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    change = np.flatnonzero(np.diff(owners)) + 1
    starts = np.concatenate([[0], change]).astype(np.int64)
    return owners[starts], starts


class DenseCache(ScopeCache[DenseMatrix]):
    """Per-scope in-memory matrix of descriptor vectors, kept for the scope's ``gen``:
    when it moves, the rows a truncate hid are cut and the new versions' rows appended
    (:func:`~chronomem.lexindex.kept_prefix`); reloaded after a redaction."""

    def get(self, db: Backend, scope_id: int, gen: int) -> DenseMatrix:
        """The scope's matrix at generation ``gen`` (loaded from the backend if stale)."""
        hit = self.cached(scope_id)
        if hit is not None and hit.gen == gen:
            return hit
        state = lx.change_state(db, scope_id)
        base = None
        if hit is not None and hit.seqs is not None:
            keep = lx.kept_prefix(hit.state, state, hit.seqs)
            if keep is not None:  # a truncate hid a suffix: keep the rest
                rows = int(hit.starts[keep]) if keep < hit.vids.size else hit.matrix.shape[0]
                base = DenseMatrix(
                    gen, hit.vids[:keep], hit.starts[:keep], hit.matrix[:rows], state,
                    hit.last_seq, hit.seqs[:keep],
                    None if hit.matrix32 is None else hit.matrix32[:rows],
                )  # fmt: skip
        owners, seqs, matrix32 = db.vectors_after(scope_id, -1 if base is None else base.last_seq)
        matrix32 = np.ascontiguousarray(matrix32, dtype=np.float32)
        matrix = matrix32.astype(np.float64)  # once per load: exact scores dot in float64
        last = int(seqs[-1]) if seqs.size else (-1 if base is None else base.last_seq)
        vids, starts = _versions(owners)
        vseqs = seqs[starts] if starts.size else np.zeros(0, dtype=np.int64)
        if base is not None and base.vids.size:
            if vids.size:
                starts = np.concatenate([base.starts, starts + base.matrix.shape[0]])
                vids = np.concatenate([base.vids, vids])
                matrix = np.concatenate([base.matrix, matrix])
                vseqs = np.concatenate([base.seqs, vseqs])  # type: ignore[list-item]
                old32 = base.matrix32 if base.matrix32 is not None else base.matrix
                matrix32 = np.concatenate([old32.astype(np.float32), matrix32])
            else:
                vids, starts, matrix = base.vids, base.starts, base.matrix
                vseqs = base.seqs  # type: ignore[assignment]
                matrix32 = base.matrix32  # type: ignore[assignment]
        built = DenseMatrix(gen, vids, starts, matrix, state, last, vseqs, matrix32)
        return self.store(scope_id, built)


#: Below this many rows the exact float64 product is cheap enough on its own.
PREFILTER_ROWS = 20_000


def dense(dm: DenseMatrix, qvec: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Top-``k`` versions by max cosine between the query and a descriptor window.

    Large matrices are searched in two passes with the same result as one exact pass: a
    float32 product over every row (half the memory traffic of float64) bounds each
    version's score within ``slack`` of its exact value, every version that could reach
    the exact top ``k`` (or tie with its last) is kept, and only their rows are scored
    again in float64 (:func:`prefilter`)."""
    if dm.vids.size == 0 or k <= 0:
        return []
    k = min(k, dm.vids.size)
    if dm.matrix32 is not None and dm.matrix.shape[0] >= PREFILTER_ROWS:
        return _top(dm, *prefilter(dm, qvec, k), k)
    # float64 einsum (see similarities): exact for grid vectors, on any CPU
    sims = similarities(dm.matrix, qvec)
    # one window per version (short descriptors): the row maxima are the rows themselves
    best = sims if dm.starts.size == sims.size else np.maximum.reduceat(sims, dm.starts)
    return _top(dm, np.arange(best.size), rounded(best), k)


def prefilter(dm: DenseMatrix, qvec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(version positions, their exact rounded scores) of every version whose float32
    score is within ``2 * slack`` plus one rounding step of the float32 ``k``-th best.

    Why that is exact: the rows are the float32 values the float64 matrix holds, so a
    float32 dot product of a row with the query (rounded to float32) is off by at most
    ``(dim + 1) * 2**-24 * |q|`` for unit rows (a sum of ``dim`` products in any order);
    ``slack`` doubles that. A version in the exact top ``k`` (after rounding to
    ``SCORE_DECIMALS``) then scores at least the float32 ``k``-th best minus two slacks and
    a rounding step in float32, so it is kept; the kept versions are rescored exactly."""
    assert dm.matrix32 is not None
    q64 = np.asarray(qvec, dtype=np.float64).ravel()
    q32 = q64.astype(np.float32)
    approx = np.einsum("ij,j->i", dm.matrix32, q32)
    one = dm.starts.size == approx.size
    best32 = approx if one else np.maximum.reduceat(approx, dm.starts)
    norm = float(np.sqrt(np.dot(q64, q64)))
    slack = 2.0 * (dm.matrix32.shape[1] + 1) * 2.0**-24 * max(1.0, norm) + 2.0**-20
    n = best32.size
    kth = float(np.partition(best32, n - k)[n - k])
    keep = np.flatnonzero(best32 >= kth - 2.0 * slack - 10.0**-SCORE_DECIMALS)
    if one:
        exact = similarities(dm.matrix[keep], q64)
    else:
        stops = np.append(dm.starts[1:], dm.matrix.shape[0])
        lo, hi = dm.starts[keep], stops[keep]
        counts = hi - lo
        rows = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        sims = similarities(dm.matrix[rows], q64)
        exact = np.maximum.reduceat(sims, np.cumsum(counts) - counts)
    return keep, rounded(exact)


def _top(dm: DenseMatrix, pos: np.ndarray, best: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best of versions ``pos`` scoring ``best`` (rounded); everything tied with
    the k-th score competes, and ties go to the earlier (lower) version."""
    k = min(k, best.size)
    kth = np.partition(best, best.size - k)[best.size - k]
    pool = np.flatnonzero(best >= kth)
    top = pool[np.lexsort((pos[pool], -best[pool]))][:k]
    return [(int(dm.vids[pos[i]]), float(best[i])) for i in top]
