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
from chronomem.embedders import rounded, similarities
from chronomem.scope_cache import ScopeCache


@dataclass(frozen=True)
class _DenseMatrix:
    gen: int
    vids: np.ndarray  # version id per version, in seq order
    starts: np.ndarray  # first chunk row of each version
    matrix: np.ndarray  # (n_chunks, dim) float64 (exact float32 values), rows unit
    state: tuple[Any, ...] = ()  # lexindex.change_state when built
    last_seq: int = -1  # the last version's seq
    seqs: np.ndarray | None = None  # seq per version


def _versions(owners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(version ids, first rows) of an owner-per-row array (rows grouped by owner)."""
    if not owners.size:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    change = np.flatnonzero(np.diff(owners)) + 1
    starts = np.concatenate([[0], change]).astype(np.int64)
    return owners[starts], starts


class DenseCache(ScopeCache[_DenseMatrix]):
    """Per-scope in-memory matrix of descriptor vectors, kept for the scope's ``gen``:
    when it moves, the rows a truncate hid are cut and the new versions' rows appended
    (:func:`~chronomem.lexindex.kept_prefix`); reloaded after a redaction."""

    def get(self, db: Backend, scope_id: int, gen: int) -> _DenseMatrix:
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
                base = _DenseMatrix(
                    gen, hit.vids[:keep], hit.starts[:keep], hit.matrix[:rows], state,
                    hit.last_seq, hit.seqs[:keep],
                )  # fmt: skip
        owners, seqs, matrix = db.vectors_after(scope_id, -1 if base is None else base.last_seq)
        matrix = matrix.astype(np.float64)  # once per load: every search dots in float64
        last = int(seqs[-1]) if seqs.size else (-1 if base is None else base.last_seq)
        vids, starts = _versions(owners)
        vseqs = seqs[starts] if starts.size else np.zeros(0, dtype=np.int64)
        if base is not None and base.vids.size:
            if vids.size:
                starts = np.concatenate([base.starts, starts + base.matrix.shape[0]])
                vids = np.concatenate([base.vids, vids])
                matrix = np.concatenate([base.matrix, matrix])
                vseqs = np.concatenate([base.seqs, vseqs])  # type: ignore[list-item]
            else:
                vids, starts, matrix = base.vids, base.starts, base.matrix
                vseqs = base.seqs  # type: ignore[assignment]
        built = _DenseMatrix(gen, vids, starts, matrix, state, last, vseqs)
        return self.store(scope_id, built)


def dense(dm: _DenseMatrix, qvec: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Top-``k`` versions by max cosine between the query and a descriptor window."""
    if dm.vids.size == 0 or k <= 0:
        return []
    # float64 einsum (see similarities): exact for grid vectors, on any CPU
    sims = similarities(dm.matrix, qvec)
    # one window per version (short descriptors): the row maxima are the rows themselves
    best = sims if dm.starts.size == sims.size else np.maximum.reduceat(sims, dm.starts)
    best = rounded(best)  # last-bit noise must not rank
    k = min(k, best.size)
    # Everything tied with the k-th score competes; ties go to the earlier (lower) version.
    kth = np.partition(best, best.size - k)[best.size - k]
    pool = np.flatnonzero(best >= kth)
    top = pool[np.lexsort((pool, -best[pool]))][:k]
    return [(int(dm.vids[i]), float(best[i])) for i in top]
