"""ChronoMem's requests part: resolving a request to versions, and rolling back.

:class:`Requests` holds the store's :class:`~chronomem.engine.StoreEngine` (backend,
encoder, retrieval settings, resolver, the checked-out branch); each method checks its
arguments, reads the checked-out branch's row and hands it to :mod:`~chronomem.resolve`,
:mod:`~chronomem.nl` or :mod:`~chronomem.rollback`. :class:`~chronomem.store.ChronoMem`
exposes these methods under the same names.
"""

from __future__ import annotations

from typing import Any

from chronomem import nl, rollback
from chronomem import parse as ps
from chronomem import resolve as rs
from chronomem import validate as val
from chronomem import vocabulary as vc
from chronomem.engine import StoreEngine
from chronomem.types import RollbackMode, RollbackPlan, RollbackResult


class Requests:
    """Resolution and rollback over one :class:`~chronomem.engine.StoreEngine`."""

    def __init__(self, engine: StoreEngine, keep_as: Any = None) -> None:
        self._e = engine
        # keep_as(app, user, name) -> keep(scope): what a rollback's keep_as runs in its
        # transaction (the branches part forks the HEAD being left)
        self._keep_as = keep_as

    def _check_query(self, app: str, user: str, query: str, k: int) -> None:
        val.text(query, "query", empty=True)
        val.integer(k, "k", minimum=0)

    # -- resolution -------------------------------------------------------------------------

    def resolve_lexical(
        self, app: str, user: str, query: str, k: int = 5
    ) -> list[tuple[int, float]]:
        """BM25-only stage: versions whose descriptor matches ``query`` (score = -bm25)."""
        self._check_query(app, user, query, k)
        with self._e.reading(app, user) as sc:
            if sc is None:
                return []
            return rs.lexical(
                self._e.db,
                sc.scope_id,
                query,
                k,
                rs.lexical_index(self._e.db, sc, self._e.retrieval()),
            )

    def resolve_dense(self, app: str, user: str, query: str, k: int = 5) -> list[tuple[int, float]]:
        """Dense-only stage: max cosine between ``query`` and each descriptor window."""
        self._check_query(app, user, query, k)
        with self._e.reading(app, user) as sc:
            return (
                [] if sc is None else rs.dense_stage(self._e.db, sc, query, k, self._e.retrieval())
            )

    def resolve_hybrid(
        self, app: str, user: str, query: str, k: int = 5
    ) -> list[tuple[int, float]]:
        """Hybrid stage: RRF (k0 = ``rrf_k0``) of the lexical and dense top-``depth`` lists."""
        self._check_query(app, user, query, k)
        with self._e.reading(app, user) as sc:
            if sc is None:
                return []
            return rs.hybrid_stage(self._e.db, sc, query, k, self._e.retrieval())[0]

    def detect_intent(self, query: str) -> str:
        """``"undo"`` or ``"restore_to"`` as the request parser reads it
        (:func:`chronomem.parse.parse`: cue words respelt, operator phrases such as
        "the chat right before" taken out, "before you knew X" an undo)."""
        return ps.parse(val.text(query, "query", empty=True)).intent

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
        commit's parent and keeps ``restore_to`` targets as is. A request that names a
        time is read against the writes' ``valid_time`` (see
        :mod:`chronomem.timeref`). ``rerank=False`` skips the reranker (an
        ablation).
        """
        val.text(query, "query", empty=True)
        val.integer(k, "k", minimum=0)
        val.choice(intent, "intent", ("undo", "restore_to"), none_ok=True)
        if not isinstance(rerank, bool):
            raise TypeError(f"rerank must be True or False, got {rerank!r}")
        val.scope_key(app, user)
        parsed = ps.parse(query)
        intent = intent or parsed.intent
        stage = None if stage is None else val.stage(stage, "stage")
        rt = self._e.retrieval()
        with self._e.reading(app, user, require=True) as sc:
            assert sc is not None  # require=True raised otherwise
            parsed = vc.read_against(self._e.db, sc, parsed)
            got = rs.resolve_request(
                self._e.db, sc, query, k + 1, intent, rt, rerank=rerank, stage=stage, parsed=parsed
            )
        return got.targets.ranked[:k]

    # -- rollback ---------------------------------------------------------------------------

    def rollback_to_version(
        self,
        app: str,
        user: str,
        version_id: int,
        *,
        mode: RollbackMode = "truncate",
        reason: str = "rollback",
        expected_head: int | None = None,
        keep_as: str | None = None,
    ) -> int:
        """Restore S(version_id) and return the new HEAD.

        ``truncate`` sets HEAD to the target and hides every later version (O(1) in
        their number; :meth:`compact` deletes them); ``revert`` appends a new version
        equal to the target. Both change state and indexes in one transaction.
        ``keep_as``: a new branch of that name keeps the HEAD being left (forked in the
        same transaction), so "undo to before X" loses nothing that came after.
        ``expected_head`` (e.g. a :class:`RollbackPlan`'s ``head``): if HEAD is not that
        version any more (another writer moved it), raise :class:`HeadMovedError` and
        change nothing.
        """
        val.integer(version_id, "version_id")
        val.choice(mode, "mode", ("truncate", "revert"))
        val.no_nul(val.text(reason, "reason", empty=True), "reason")
        if expected_head is not None:
            val.integer(expected_head, "expected_head", minimum=0)
        key = self._e.route(app, user)
        keep = None if keep_as is None else self._keep_as(app, user, keep_as)
        return rollback.restore(
            self._e.db, *key, version_id, mode, reason, self._e.encoder.embed, expected_head,
            keep,
        )  # fmt: skip

    def plan_rollback_by_nl_query(
        self,
        app: str,
        user: str,
        query: str,
        *,
        intent: str | None = None,
        k: int = 5,
        mode: RollbackMode = "truncate",
    ) -> RollbackPlan:
        """What :meth:`rollback_to_version_by_nl_query` would do; writes nothing.

        Raises :class:`UncertainRequestError` when the request is not confident (see
        the module docstring of :mod:`chronomem.nl` for the rule).
        """
        val.text(query, "query", empty=True)
        val.choice(intent, "intent", ("undo", "restore_to"), none_ok=True)
        val.integer(k, "k", minimum=1)
        val.choice(mode, "mode", ("truncate", "revert"))
        with self._e.reading(app, user, require=True) as sc:
            assert sc is not None  # require=True raised otherwise
            return nl.plan_rollback(
                self._e.db, sc, query, intent, k, mode, self._e.retrieval(), self._e.resolver
            )

    def rollback_to_version_by_nl_query(
        self,
        app: str,
        user: str,
        query: str,
        *,
        mode: RollbackMode = "truncate",
        intent: str | None = None,
        k: int = 5,
        preview: bool = False,
        keep_as: str | None = None,
    ) -> RollbackResult | RollbackPlan:
        """Resolve ``query`` to a target and restore it, if the match is confident.

        ``preview=True`` returns the :class:`RollbackPlan` and writes nothing (agents
        confirm before destroying state). Otherwise the plan is applied with
        :meth:`rollback_to_version` and a :class:`RollbackResult` (with confidence,
        runner-up and the versions a truncate discarded) is returned; ``keep_as`` keeps
        the HEAD being left on a new branch of that name. Raises
        :class:`UncertainRequestError`, changing nothing, when not confident.
        """
        if not isinstance(preview, bool):
            raise TypeError(f"preview must be True or False, got {preview!r}")
        plan = self.plan_rollback_by_nl_query(app, user, query, intent=intent, k=k, mode=mode)
        if preview:
            return plan
        # The request is kept as the rollback's reason (NUL, which PostgreSQL text cannot
        # hold, shown as U+FFFD on every backend); the plan's HEAD must still be HEAD.
        reason = "nl: " + query[:200].replace("\x00", "\ufffd")
        head = self.rollback_to_version(
            app, user, plan.target_version, mode=mode, reason=reason, expected_head=plan.head,
            keep_as=keep_as,
        )  # fmt: skip
        return nl.rollback_result(plan, head)
