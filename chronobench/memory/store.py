"""ChronoMem: a versioned, rollback-able long-term memory store on SQLite.

Storage design (why intervals): the history of a scope is linear, so every
snapshot S(v) is "the items whose validity interval contains seq(v)". Each
write adds or closes one ``spans`` row per changed item, so storage grows with
the number of changes (linear in writes), not with snapshot size times versions
(a 10,000-item snapshot that changes one item costs one row). Item texts are
content-addressed blobs shared by every version that holds them. Reading S(v)
is one indexed range query (no log replay); a truncate rollback writes O(1)
rows (it hides the discarded seq range, see :mod:`chronobench.memory.sql`, and
:meth:`ChronoMem.compact` deletes hidden rows later); a revert rollback writes
only the items that differ between S(target) and S(HEAD).

Version ids are integers per scope, never reused: the empty root is version 0,
the first commit in a fresh scope is version 1, and after a truncate the next
commit gets a fresh id. ``VersionRecord.seq`` is the position on the current
history (0 = root); internal seqs are never reused either.

Concurrency: WAL mode, a busy timeout, and every write runs in ``BEGIN
IMMEDIATE`` and updates the scope's row in ``scopes`` (HEAD, next id), which
serialises commits per scope (and, SQLite having one writer, briefly across
scopes). Embeddings are computed before the transaction so the lock is held
for milliseconds.
"""

from __future__ import annotations

import json

import numpy as np

from chronobench.memory import query as q
from chronobench.memory import resolve as rs
from chronobench.memory import validate as val
from chronobench.memory.commit import scope_tag
from chronobench.memory.core import StoreCore, check_stage
from chronobench.memory.embedders import shared_cache
from chronobench.memory.nl import NLRollbackMixin
from chronobench.memory.rollback import revert_to, truncate_to
from chronobench.memory.sql import alive, alive_at, visible
from chronobench.memory.types import (
    EmptyScopeError,
    RollbackMode,
    SearchHit,
    UnknownVersionError,
    VersionRecord,
)
from chronobench.memory.upkeep import UpkeepMixin


class ChronoMem(NLRollbackMixin, UpkeepMixin, StoreCore):
    """Versioned memory store; see the module docstring for the design.

    Args:
        path: SQLite file, or ``":memory:"``.
        embedder: ``"minilm"`` (packaged all-MiniLM-L6-v2, default, loaded lazily),
            ``"hash"`` (fast deterministic, for tests/benchmarks), any
            sentence-transformers model name, or an object with ``encode``.
        reranker: optional :class:`~chronobench.memory.rerank.Reranker`.
        rrf_k0: the k0 constant of reciprocal rank fusion.
        depth: candidates taken from each stage before fusion.
        rerank_depth: fused candidates passed to the reranker.
        episode_label: commit label that names a commit's episode (default
            ``"session"``); requests about a whole episode then target its boundary
            (see :func:`chronobench.memory.query.refers_to_episode`). None disables it.
        stage: the retrieval that finds the commit a request describes, before the
            reranker and the intent/episode rules: ``"lexical"`` (FTS5 bm25),
            ``"dense"`` (embedding cosine) or ``"hybrid"`` (both, RRF; default).
    """

    # -- reads ------------------------------------------------------------------------------

    def head(self, app: str, user: str) -> int:
        """HEAD's version id (0, the empty root, for a scope without writes)."""
        sc = self._scope(app, user)
        return sc[1] if sc else 0

    def versions(self, app: str, user: str) -> list[VersionRecord]:
        """The versions on the current linear history, root first (``seq`` = position)."""
        sc = self._scope(app, user)
        if sc is None:
            return [VersionRecord(0, 0, None, "root", None, {}, 0.0)]
        with self._lock:
            rows = self.conn.execute(
                "SELECT version_id, seq, parent, op, summary, labels, created, source, reason, "
                "valid_time, descriptor FROM versions v WHERE scope_id = ? AND "
                f"{visible(self.conn, sc[0], 'v.seq')} ORDER BY seq",
                (sc[0],),
            ).fetchall()
        return [
            VersionRecord(r[0], pos, r[2], r[3], r[4], json.loads(r[5] or "{}"), *r[6:])
            for pos, r in enumerate(rows)
        ]

    def _seq_of(self, sc: tuple[int, int, int, int], version: int) -> int:
        val.integer(version, "version_id")
        row = self.conn.execute(
            "SELECT seq FROM versions v WHERE scope_id = ? AND version_id = ? AND "
            + visible(self.conn, sc[0], "v.seq"),
            (sc[0], int(version)),
        ).fetchone()
        if row is None:
            raise UnknownVersionError(
                f"version {version} is not on this scope's history (HEAD is {sc[1]}); "
                "list valid ids with versions(app, user)"
            )
        return int(row[0])

    def snapshot(self, app: str, user: str, version: int | None = None) -> dict[str, str]:
        """S(version) (default HEAD) as ``{item_id: text}``."""
        if version is not None:
            val.integer(version, "version")
        sc = self._scope(app, user)
        if sc is None:
            if version not in (None, 0):
                raise UnknownVersionError(f"version {version}: scope ({app}, {user}) is empty")
            return {}
        with self._lock:
            seq = sc[2] if version is None else self._seq_of(sc, version)
            rows = self.conn.execute(
                "SELECT s.item_id, b.text FROM spans s JOIN blobs b ON b.scope_id = s.scope_id "
                f"AND b.hash = s.hash WHERE s.scope_id = ? AND {alive_at(self.conn, sc[0])} "
                "ORDER BY s.span_id",
                (sc[0], seq, seq),
            ).fetchall()
        return dict(rows)

    def search(
        self, app: str, user: str, query: str, k: int = 5, *, mode: str = "hybrid"
    ) -> list[SearchHit]:
        """Items of S(HEAD) relevant to ``query``: FTS5 bm25 and dense cosine over the
        items, fused by RRF (``mode`` "lexical" or "dense" uses one stage). Item
        vectors come from the process-wide embedding cache, so the first dense
        search embeds S(HEAD) once and later ones only embed new contents."""
        val.text(query, "query", empty=True)
        val.integer(k, "k", minimum=0)
        val.choice(mode, "mode", ("hybrid", "lexical", "dense"))
        sc = self._scope(app, user)
        if sc is None or k <= 0:
            return []
        with self._lock:
            items = self.conn.execute(
                "SELECT s.span_id, s.item_id, b.text FROM spans s JOIN blobs b "
                "ON b.scope_id = s.scope_id AND b.hash = s.hash "
                f"WHERE s.scope_id = ? AND {alive(self.conn, sc[0])} ORDER BY s.span_id",
                (sc[0],),
            ).fetchall()
            by_span = {sid: (item, text) for sid, item, text in items}
            lists: list[list[tuple[int, float]]] = []
            expr = q.fts_expression(query)
            if mode != "dense" and expr:
                # The item index also holds closed and discarded spans: keep live ones.
                # "+rowid": a plain rowid IN (...) is pushed into FTS5, which then runs
                # the MATCH once per listed rowid (seconds at 10k items).
                lists.append(
                    self.conn.execute(
                        "SELECT rowid, -bm25(item_fts, 0.0, 1.0) FROM item_fts WHERE item_fts "
                        "MATCH ? AND +rowid IN (SELECT s.span_id FROM spans s WHERE s.scope_id = ? "
                        f"AND {alive(self.conn, sc[0])}) ORDER BY bm25(item_fts, 0.0, 1.0) LIMIT ?",
                        (f'tag : "{scope_tag(sc[0])}" AND body : ({expr})', sc[0], self.depth),
                    ).fetchall()
                )
        if mode != "lexical" and items and query.strip():
            cache = shared_cache(self.embedder)
            mat = cache.encode([t for _, _, t in items])
            sims = mat @ cache.encode([query])[0]
            order = np.argsort(-sims, kind="stable")[: self.depth]
            lists.append([(int(items[i][0]), float(sims[i])) for i in order])
        fused = rs.rrf(lists, self.rrf_k0) if len(lists) > 1 else (lists[0] if lists else [])
        return [SearchHit(*by_span[s], score) for s, score in fused[:k] if s in by_span]

    # -- resolution -------------------------------------------------------------------------

    def _require(self, app: str, user: str) -> tuple[int, int, int, int]:
        sc = self._scope(app, user)
        if sc is None or sc[2] == 0:
            raise EmptyScopeError(
                f"scope (app={app!r}, user={user!r}) has no committed versions; commit first"
            )
        return sc

    def resolve_lexical(
        self, app: str, user: str, query: str, k: int = 5
    ) -> list[tuple[int, float]]:
        """BM25-only stage: versions whose descriptor matches ``query`` (score = -bm25)."""
        val.text(query, "query", empty=True)
        val.integer(k, "k", minimum=0)
        sc = self._scope(app, user)
        if sc is None:
            return []
        with self._lock:
            return rs.lexical(self.conn, sc[0], query, k)

    def resolve_dense(self, app: str, user: str, query: str, k: int = 5) -> list[tuple[int, float]]:
        """Dense-only stage: max cosine between ``query`` and each descriptor window."""
        val.text(query, "query", empty=True)
        val.integer(k, "k", minimum=0)
        sc = self._scope(app, user)
        if sc is None or not query.strip():
            return []
        with self._lock:
            dm = self._dense.get(self.conn, sc[0], sc[3])
        return rs.dense(dm, self._embed_query(query), k)

    def _embed_query(self, query: str) -> np.ndarray:
        return shared_cache(self.embedder).encode([query])[0]

    def resolve_hybrid(
        self, app: str, user: str, query: str, k: int = 5
    ) -> list[tuple[int, float]]:
        """Hybrid stage: RRF (k0 = ``rrf_k0``) of the lexical and dense top-``depth`` lists."""
        val.integer(k, "k", minimum=0)
        depth = max(k, self.depth)
        fused = rs.rrf(
            [
                self.resolve_lexical(app, user, query, depth),
                self.resolve_dense(app, user, query, depth),
            ],
            self.rrf_k0,
        )
        return fused[:k]

    def detect_intent(self, query: str) -> str:
        """``"undo"`` or ``"restore_to"``; see :func:`chronobench.memory.query.detect_intent`."""
        return q.detect_intent(val.text(query, "query", empty=True))

    def _described(
        self, app: str, user: str, query: str, k: int, rerank: bool = True, stage: str | None = None
    ) -> list[tuple[int, float]]:
        """Commits the query describes: the retrieval ``stage``, then the optional reranker."""
        cq = q.content_query(query)
        stage = self.stage if stage is None else check_stage(stage, "stage")
        retrieve = {
            "lexical": self.resolve_lexical,
            "dense": self.resolve_dense,
            "hybrid": self.resolve_hybrid,
        }[stage]
        fused = retrieve(app, user, cq, max(k, self.rerank_depth))
        if self.reranker is None or not rerank or not fused:
            return fused[:k]
        head = fused[: self.rerank_depth]
        sc = self._require(app, user)
        with self._lock:
            desc = dict(
                self.conn.execute(
                    f"SELECT version_id, descriptor FROM versions WHERE scope_id = ? AND "
                    f"version_id IN ({','.join('?' * len(head))})",
                    (sc[0], *[v for v, _ in head]),
                ).fetchall()
            )
        reranked = self.reranker.rerank(cq, [(v, desc.get(v, ""), s) for v, s in head])
        seen = {v for v, _ in reranked}
        return (list(reranked) + [(v, s) for v, s in fused if v not in seen])[:k]

    def resolve(
        self,
        app: str,
        user: str,
        query: str,
        k: int = 5,
        *,
        intent: str | None = None,
        rerank: bool = True,
        stage: str | None = None,
    ) -> list[tuple[int, float]]:
        """Ranked restore targets ``[(version_id, score)]`` for a rollback request.

        The retrieval ``stage`` (default: the store's ``stage``; "lexical", "dense" or
        "hybrid") and the reranker, if any, find the commits the request describes;
        the intent (detected, or forced with ``intent``) maps an ``undo`` to each
        commit's parent and keeps ``restore_to`` targets as is. ``rerank=False``
        skips the reranker (an ablation).
        """
        val.text(query, "query", empty=True)
        val.integer(k, "k", minimum=0)
        val.choice(intent, "intent", ("undo", "restore_to"), none_ok=True)
        if not isinstance(rerank, bool):
            raise TypeError(f"rerank must be True or False, got {rerank!r}")
        sc = self._require(app, user)
        intent = intent or q.detect_intent(query)
        described = self._described(app, user, query, k + 1, rerank, stage)
        return self._targets(sc, described, intent, query)[:k]

    def _targets(
        self,
        sc: tuple[int, int, int, int],
        described: list[tuple[int, float]],
        intent: str,
        query: str = "",
    ) -> list[tuple[int, float]]:
        if self.episode_label and described and q.refers_to_episode(query):
            with self._lock:
                # json_extract in SQLite: no per-row JSON parsing in Python on this path.
                episodes = self.conn.execute(
                    "SELECT version_id, json_extract(labels, ?) FROM versions v "
                    f"WHERE scope_id = ? AND {visible(self.conn, sc[0], 'v.seq')} ORDER BY seq",
                    (f'$."{self.episode_label}"', sc[0]),
                ).fetchall()
            described = rs.snap_to_episodes(described, intent, episodes)
        if intent != "undo" or not described:
            return list(described)
        vids = [v for v, _ in described]
        with self._lock:
            parents = dict(
                self.conn.execute(
                    f"SELECT version_id, parent FROM versions WHERE scope_id = ? AND version_id "
                    f"IN ({','.join('?' * len(vids))})",
                    (sc[0], *vids),
                ).fetchall()
            )
        return rs.apply_intent(described, intent, parents)

    # -- rollback ---------------------------------------------------------------------------

    def rollback_to_version(
        self,
        app: str,
        user: str,
        version_id: int,
        *,
        mode: RollbackMode = "truncate",
        reason: str = "rollback",
    ) -> int:
        """Restore S(version_id) and return the new HEAD.

        ``truncate`` sets HEAD to the target and hides every later version (O(1) in
        their number; :meth:`compact` deletes them); ``revert`` appends a new version
        equal to the target. Both change state and indexes in one transaction.
        """
        val.integer(version_id, "version_id")
        val.choice(mode, "mode", ("truncate", "revert"))
        val.text(reason, "reason", empty=True)
        self._require(app, user)
        with self._txn() as conn:
            sc = self._scope(app, user)
            assert sc is not None
            seq = self._seq_of(sc, version_id)
            if mode == "truncate":
                return truncate_to(conn, sc[0], int(version_id), seq, reason)
            return revert_to(conn, sc[0], int(version_id), seq, reason, self._embed)
