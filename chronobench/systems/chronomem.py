"""ChronoMem as a system under test: resolve -> roll back -> read S(HEAD) -> answer.

:class:`ChronoMemSystem` restores the version the request text resolves to;
subclasses choose the version otherwise (the oracle: the gold target through the
oracle channel; the request-blind floors in ``baselines.restore_floors``) and read the
restored state exactly as ChronoMem does, so their rows differ only in the version.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from chronobench.protocols import (
    GenerationRequest,
    OracleTarget,
    Question,
    Reply,
    RollbackOutcome,
    StreamWrite,
)
from chronobench.systems.base import (
    APP,
    RestoringReaderOptions,
    SystemContext,
    item_order,
    pack_ranked,
    pack_spread,
)
from chronobench.systems.prompts import is_summary_request, qa_request, summary_request
from chronobench.systems.registry import ChronoMemOptions, ChronoMemResolverOptions
from chronobench.systems.stores import IngestedStream
from chronomem.types import UncertainRequestError

# Stream memos kept process-wide, oldest dropped first. A main-job worker runs ChronoMem,
# the oracle and the restore floors one after another on the same ten streams
# (chronobench.runner.parallel chains them), and their restored states mostly coincide:
# the 7 cells ask ~247,000 (state, question) pairs, ~95,000 of them distinct. A prompt
# holds references to its state's item texts, so a stream's memo is a few MB.
SHARED_STREAMS_MAX = 24
_SHARED: OrderedDict[tuple[Any, ...], dict[tuple[Any, str], GenerationRequest]] = OrderedDict()


def shared_prompts(key: tuple[Any, ...]) -> dict[tuple[Any, str], GenerationRequest]:
    """The process-wide prompt memo of one stream read one way (``key``: see
    ``ChronoMemSystem._reading_key``), created empty on first use."""
    memo = _SHARED.get(key)
    if memo is None:
        while len(_SHARED) >= SHARED_STREAMS_MAX:
            _SHARED.popitem(last=False)
        memo = _SHARED[key] = {}
    else:
        _SHARED.move_to_end(key)
    return memo


def forget_shared_prompts() -> None:
    """Empty the process-wide prompt memo (tests; a redaction elsewhere in the process)."""
    _SHARED.clear()


class ChronoMemSession:
    """One session over a stream's post-exposure store: ``rollback`` restores a version
    on a copy (how the version is chosen is the system's ``restore``); questions read
    the copy, or the post-exposure store when nothing was rolled back."""

    def __init__(self, system: ChronoMemSystem, restore: Any) -> None:
        self.system = system
        self._restore = restore
        self._work: Any = None
        # What the session's state is known to equal (see ChronoMemSystem.prompts): the
        # post-exposure store until a rollback, then the restored version.
        self._state: tuple[Any, ...] | None = ("head",)

    def rollback(self, request: str) -> RollbackOutcome:
        """Restore the version ``request`` leads to, on a copy of the store."""
        if self._work is not None:
            raise RuntimeError("a session rolls back once; open a new session for the next")
        self._state = None  # unknown until the restore says which version it is
        self._work = self.system.ingested.store.clone()
        outcome = self._restore(self._work, request)
        if outcome.selected_version is not None and "refused" not in outcome.meta:
            self._state = ("restored", self.system.mode, int(outcome.selected_version))
        return outcome

    def ask(self, questions: Sequence[Question]) -> list[Reply]:
        """One prompt per question, built from the session's state only."""
        store = self._work if self._work is not None else self.system.ingested.store
        # An unknown state shares nothing: its prompts go to a dict of this call only.
        memo = self.system.prompts if self._state is not None else {}
        todo = [q.text for q in questions if (self._state, q.text) not in memo]
        # The questions' search vectors in one embedder call (the same vectors).
        store.warm_queries([t for t in todo if not is_summary_request(t)])
        replies = []
        for q in questions:
            key = (self._state, q.text)
            if key not in memo:
                memo[key] = self._prompt(q.text)
            replies.append(Reply(q.question_id, request=memo[key]))
        return replies

    def _prompt(self, text: str) -> GenerationRequest:
        sys_, ing = self.system, self.system.ingested
        store = self._work if self._work is not None else ing.store
        if is_summary_request(text):
            snap = store.snapshot(APP, ing.user)
            ordered = sorted(snap.items(), key=lambda kv: sys_.order.get(kv[0], (1 << 30, 0)))
            items = pack_spread([t for _, t in ordered], sys_.summary_budget)
            return summary_request(text, items, sys_.ctx.params)
        hits = store.search(APP, ing.user, text, k=sys_.top_k)
        return qa_request(text, pack_ranked([h.text for h in hits], sys_.budget), sys_.ctx.params)

    def close(self) -> None:
        """Release the working copy (the cached post-exposure store stays)."""
        if self._work is not None:
            self._work.close()
            self._work = None


class ChronoMemSystem(RestoringReaderOptions):
    """Restores the memory to the version the request resolves to, then reads only it.

    ``resolver="backbone"``: the run's backbone (``ctx.backbone``) picks among the top
    ``resolver_top_k`` candidates of each rollback request, or refuses
    (:mod:`chronomem.backbone_resolver`); ``"auto"``: on unless the backbone is
    LLM-free (:data:`chronobench.spec.LLM_FREE_BACKBONES`); ``"none"``: off.
    """

    name = "chronomem"

    def __init__(self, ctx: SystemContext, options: ChronoMemOptions) -> None:
        super().__init__(ctx, options)
        self._ingested: IngestedStream | None = None
        self.order: dict[str, tuple[int, int]] = {}
        # Prompts by (session state, question) for the current stream. Rollback is
        # deterministic: every session that restores write j of this stream (same mode)
        # holds the same state, so a question asked there again (the request-blind
        # floors restore one version per stream; ChronoMem and the oracle often share
        # v*) gets the prompt already built: the same search, the same items. Sessions
        # whose state is unknown (a refused rollback) never share. The memo is
        # process-wide (:func:`shared_prompts`): a later cell of this family on the
        # same stream, store settings and reader options reuses it.
        self.prompts: dict[tuple[Any, str], GenerationRequest] = {}
        # Only ChronoMem's own options name a resolver (the oracle and floors have none).
        own = isinstance(options, ChronoMemResolverOptions)
        self.resolver = self._resolver(options) if own else None

    def _resolver(self, options: ChronoMemResolverOptions) -> Any:
        """The request resolver the options ask for (None: off)."""
        from chronobench.spec import LLM_FREE_BACKBONES

        backbone = self.ctx.backbone
        kind = options.resolver
        if kind == "auto":
            llm = backbone is not None and getattr(backbone, "name", None) not in LLM_FREE_BACKBONES
            kind = "backbone" if llm else "none"
        if kind == "none":
            return None
        if backbone is None:
            raise ValueError(
                "system.resolver=backbone needs the run's backbone (SystemContext.backbone); "
                "this cell has none"
            )
        from chronomem.backbone_resolver import BackboneResolver

        return BackboneResolver(
            backbone, top_k=options.resolver_top_k, max_chars=options.resolver_max_chars
        )

    @property
    def ingested(self) -> IngestedStream:
        """The post-exposure store of the current stream."""
        if self._ingested is None:
            raise RuntimeError("ingest() must be called before a session is opened")
        return self._ingested

    @property
    def n_writes(self) -> int:
        """The stream's length (its last write id)."""
        return max(self.ingested.vid_of)

    def ingest(self, writes: Sequence[StreamWrite]) -> None:
        """Exposure: every write is committed (once per run, then cloned per session)."""
        self._ingested = self.ctx.stores.get(writes)
        self.order = item_order(writes)
        self.prompts = shared_prompts(self._reading_key())

    def _reading_key(self) -> tuple[Any, ...]:
        """What a prompt of this stream depends on besides its state and question: the
        writes, the stores' settings and the reader's options (see ``_prompt``)."""
        params = self.ctx.params
        return (
            self.ingested.digest,
            getattr(self.ctx.stores, "settings", None) or f"stores-{id(self.ctx.stores)}",
            self.mode,
            self.top_k,
            self.budget,
            self.summary_budget,
            params,
        )

    def open_session(self) -> ChronoMemSession:
        """A session whose rollback resolves the request text."""
        return ChronoMemSession(self, self.resolve)

    def resolve(self, work: Any, request: str) -> RollbackOutcome:
        """Resolve the request to a version and restore it on ``work``."""
        ing = self.ingested
        work.resolver = self.resolver  # the session's working copy only
        try:
            result = work.rollback_to_version_by_nl_query(APP, ing.user, request, mode=self.mode)
        except UncertainRequestError as exc:  # not confident: no rollback, recorded as such
            return RollbackOutcome(selected_version=None, meta={"refused": str(exc)[:300]})
        meta: dict[str, Any] = {"intent": result.intent, "confidence": result.confidence}
        if "resolver" in result.evidence:  # in write ids, as the outcome speaks
            note = dict(result.evidence["resolver"])
            note["shown"] = [ing.j_of.get(v) for v in note.get("shown", [])]
            if note.get("version") is not None:
                note["version"] = ing.j_of.get(note["version"])
            meta["resolver"] = note
        return RollbackOutcome(
            selected_version=ing.j_of.get(result.target_version),
            candidates=[(ing.j_of[v], float(s)) for v, s in result.candidates if v in ing.j_of],
            meta=meta,
        )

    def restore_to(self, work: Any, j: int, meta: dict[str, Any]) -> RollbackOutcome:
        """Restore write id ``j`` on ``work`` whatever the request says."""
        ing = self.ingested
        work.rollback_to_version(APP, ing.user, ing.vid_of[j], mode=self.mode)
        return RollbackOutcome(selected_version=j, candidates=[(j, 1.0)], meta=meta)

    def close(self) -> None:
        """Nothing to release (the run's store provider owns the stores)."""
        self._ingested = None
        self.prompts = {}


class ChronoMemOracleSystem(ChronoMemSystem):
    """Rolls back to the gold v*, received through the oracle channel: the upper bound
    that isolates restoration correctness (registered with ``oracle=True``)."""

    name = "chronomem_oracle"

    def open_session(self) -> ChronoMemSession:
        """A session at HEAD; its rollback is refused (the oracle's rollback session
        comes from :meth:`open_oracle_session`)."""

        def refuse(work: Any, request: str) -> RollbackOutcome:
            raise RuntimeError(
                "chronomem_oracle restores only the target it receives through "
                "open_oracle_session(OracleTarget(...))"
            )

        return ChronoMemSession(self, refuse)

    def open_oracle_session(self, target: OracleTarget) -> ChronoMemSession:
        """A session whose rollback restores ``target.target_version``, ignoring the text."""
        v_star = int(target.target_version)
        return ChronoMemSession(
            self, lambda work, request: self.restore_to(work, v_star, {"oracle": True})
        )
