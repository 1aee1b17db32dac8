"""NL -> version resolution stages: lexical (FTS5 bm25), dense, and RRF fusion.

Scores are "higher is better" everywhere: the lexical stage returns ``-bm25()``
(FTS5's bm25 is lower-is-better). A version's dense score is the maximum cosine
over the vectors of its descriptor windows, so a long descriptor is represented
in full instead of being truncated at the embedder's window.

The stages rank the commits a query *describes*; :func:`apply_intent` turns
that into restore targets (an ``undo`` targets the described commit's parent).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from chronobench.memory.commit import scope_tag
from chronobench.memory.query import fts_expression
from chronobench.memory.sql import visible


@dataclass(frozen=True)
class _DenseMatrix:
    gen: int
    vids: np.ndarray  # version id per version, in seq order
    starts: np.ndarray  # first chunk row of each version
    matrix: np.ndarray  # (n_chunks, dim) float32, rows L2-normalised


class DenseCache:
    """Per-scope in-memory matrix of descriptor vectors, rebuilt when ``gen`` moves."""

    def __init__(self) -> None:
        self._by_scope: dict[int, _DenseMatrix] = {}
        self._lock = threading.Lock()

    def copy(self) -> DenseCache:
        """A cache sharing the (immutable) matrices, for cloned stores."""
        other = DenseCache()
        other._by_scope = dict(self._by_scope)
        return other

    def get(self, conn: sqlite3.Connection, scope_id: int, gen: int) -> _DenseMatrix:
        """The scope's matrix at generation ``gen`` (loaded from SQLite if stale)."""
        with self._lock:
            hit = self._by_scope.get(scope_id)
        if hit is not None and hit.gen == gen:
            return hit
        rows = conn.execute(
            "SELECT v.version_id, d.vec FROM versions v JOIN desc_vecs d ON d.vrow = v.vrow "
            f"WHERE v.scope_id = ? AND {visible(conn, scope_id, 'v.seq')} ORDER BY v.seq, d.chunk",
            (scope_id,),
        ).fetchall()
        if rows:
            owners = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
            matrix = matrix.reshape(len(rows), -1)
            change = np.flatnonzero(np.diff(owners)) + 1
            starts = np.concatenate([[0], change]).astype(np.int64)
            vids = owners[starts]
        else:
            vids = starts = np.zeros(0, dtype=np.int64)
            matrix = np.zeros((0, 1), dtype=np.float32)
        built = _DenseMatrix(gen, vids, starts, matrix)
        with self._lock:
            self._by_scope[scope_id] = built
        return built

    def drop(self, scope_id: int | None = None) -> None:
        """Forget one scope's matrix (or all)."""
        with self._lock:
            if scope_id is None:
                self._by_scope.clear()
            else:
                self._by_scope.pop(scope_id, None)


def lexical(conn: sqlite3.Connection, scope_id: int, query: str, k: int) -> list[tuple[int, float]]:
    """Top-``k`` versions by FTS5 bm25 over descriptors; score is ``-bm25``."""
    expr = fts_expression(query)
    if expr is None or k <= 0:
        return []
    match = f'tag : "{scope_tag(scope_id)}" AND body : ({expr})'
    rows = conn.execute(
        "SELECT v.version_id, bm25(desc_fts, 0.0, 1.0) AS s FROM desc_fts "
        "JOIN versions v ON v.vrow = desc_fts.rowid WHERE desc_fts MATCH ? "
        f"AND {visible(conn, scope_id, 'v.seq')} ORDER BY s ASC, v.seq ASC LIMIT ?",
        (match, int(k)),
    ).fetchall()
    return [(int(v), -float(s)) for v, s in rows]


def dense(dm: _DenseMatrix, qvec: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Top-``k`` versions by max cosine between the query and a descriptor window."""
    if dm.vids.size == 0 or k <= 0:
        return []
    sims = dm.matrix @ qvec.astype(np.float32).ravel()
    best = np.maximum.reduceat(sims, dm.starts)
    k = min(k, best.size)
    top = np.argpartition(-best, k - 1)[:k]
    # Ties broken by seq order (earlier first) for determinism.
    top = top[np.lexsort((top, -best[top]))]
    return [(int(dm.vids[i]), float(best[i])) for i in top]


def rrf(lists: Sequence[Sequence[tuple[int, float]]], k0: int = 60) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: sum over lists of 1 / (k0 + rank), ranks from 1."""
    fused: dict[int, float] = {}
    for ranked in lists:
        for rank, (vid, _) in enumerate(ranked, start=1):
            fused[vid] = fused.get(vid, 0.0) + 1.0 / (k0 + rank)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


def apply_intent(
    ranked: Sequence[tuple[int, float]], intent: str, parents: dict[int, int | None]
) -> list[tuple[int, float]]:
    """Map described commits to restore targets: parent for ``undo``, itself otherwise.

    Duplicated targets keep their best score; the root (0) is a valid undo target.
    """
    if intent != "undo":
        return list(ranked)
    out: dict[int, float] = {}
    for vid, score in ranked:
        target = parents.get(vid)
        if target is None:
            continue
        if target not in out:
            out[target] = score
    return list(out.items())


def snap_to_episodes(
    ranked: Sequence[tuple[int, float]],
    intent: str,
    episodes: Sequence[tuple[int, object]],
) -> list[tuple[int, float]]:
    """Replace each matched commit by its episode's boundary commit.

    ``episodes`` lists ``(version_id, episode_label)`` in history order (labels may be
    None: such commits are left alone). ``undo`` maps to the episode's first commit (the
    intent shift then takes its parent); ``restore_to`` to its last. Duplicates keep
    their best score.
    """
    first: dict[object, int] = {}
    last: dict[object, int] = {}
    label_of: dict[int, object] = {}
    for vid, label in episodes:
        label_of[vid] = label
        if label is None:
            continue
        first.setdefault(label, vid)
        last[label] = vid
    out: dict[int, float] = {}
    for vid, score in ranked:
        label = label_of.get(vid)
        if label is not None:
            vid = first[label] if intent == "undo" else last[label]
        if vid not in out:
            out[vid] = score
    return list(out.items())
