"""ChronoMem as a system under test: resolve -> roll back -> read S(HEAD) -> answer."""

from __future__ import annotations

from typing import Any

from chronobench.data.schema import Probe, RollbackQuery, Stream
from chronobench.memory.types import UncertainRequestError
from chronobench.protocols import GenerationRequest, RollbackOutcome
from chronobench.systems.base import (
    APP,
    RestoringReaderOptions,
    SystemContext,
    pack_ranked,
    pack_spread,
)
from chronobench.systems.prompts import qa_request, summary_request
from chronobench.systems.stores import IngestedStream


class ChronoMemSystem(RestoringReaderOptions):
    """Restores the memory to the version the request resolves to, then reads only it."""

    name = "chronomem"

    def __init__(
        self,
        ctx: SystemContext,
        *,
        rollback_mode: str = "truncate",
        top_k_items: int = 8,
        context_budget_tokens: int = 2000,
        summary_budget_tokens: int = 6000,
    ) -> None:
        super().__init__(
            ctx,
            rollback_mode=rollback_mode,
            top_k_items=top_k_items,
            context_budget_tokens=context_budget_tokens,
            summary_budget_tokens=summary_budget_tokens,
        )
        self._ingested: IngestedStream | None = None
        self._work: Any = None
        self._order: dict[str, tuple[int, int]] = {}

    def ingest(self, stream: Stream) -> None:
        """Exposure: every write of the stream is committed (once per run, then cloned)."""
        self._ingested = self.ctx.stores.get(stream)
        # Item order on the timeline, so a restored snapshot reads chronologically.
        self._order = {}
        for w in stream.writes:
            for i, op in enumerate(w.ops):
                self._order.setdefault(op.item_id, (w.version, i))

    def _fresh_copy(self) -> Any:
        if self._ingested is None:
            raise RuntimeError("ingest() must be called before rollback()")
        if self._work is not None:
            self._work.close()
        self._work = self._ingested.store.clone()
        return self._work

    def rollback(self, query: RollbackQuery) -> RollbackOutcome:
        """Resolve the request to a version and restore it on a copy of the store."""
        work = self._fresh_copy()
        ing = self._ingested
        assert ing is not None
        try:
            result = work.rollback_to_version_by_nl_query(APP, ing.user, query.text, mode=self.mode)
        except UncertainRequestError as exc:  # not confident: no rollback, recorded as such
            return RollbackOutcome(selected_version=None, meta={"refused": str(exc)[:300]})
        return RollbackOutcome(
            selected_version=ing.j_of.get(result.target_version),
            candidates=[(ing.j_of[v], float(s)) for v, s in result.candidates if v in ing.j_of],
            meta={"intent": result.intent, "confidence": result.confidence},
        )

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest:
        """The prompt for one probe, built from the restored state only."""
        ing = self._ingested
        assert ing is not None and self._work is not None
        if probe.kind == "summary":
            snap = self._work.snapshot(APP, ing.user)
            ordered = sorted(snap.items(), key=lambda kv: self._order.get(kv[0], (1 << 30, 0)))
            items = pack_spread([text for _, text in ordered], self.summary_budget)
            return summary_request(probe.question, items, self.ctx.params)
        # final_qa is asked at the stream's last version: the post-exposure store, no rollback.
        store = ing.store if probe.kind == "final_qa" else self._work
        hits = store.search(APP, ing.user, probe.question, k=self.top_k)
        items = pack_ranked([h.text for h in hits], self.budget)
        return qa_request(probe.question, items, self.ctx.params)

    def answer_directly(self, query: RollbackQuery, probe: Probe) -> str | None:
        """Always goes through the backbone."""
        return None

    def close(self) -> None:
        """Release the working copy (the cached post-exposure store stays)."""
        if self._work is not None:
            self._work.close()
            self._work = None


class ChronoMemOracleSystem(ChronoMemSystem):
    """Rolls back to the gold v*: the upper bound that isolates restoration correctness."""

    name = "chronomem_oracle"

    def rollback(self, query: RollbackQuery) -> RollbackOutcome:
        """Restore the gold target version, ignoring the request text."""
        work = self._fresh_copy()
        ing = self._ingested
        assert ing is not None
        work.rollback_to_version(APP, ing.user, ing.vid_of[query.target_version], mode=self.mode)
        return RollbackOutcome(
            selected_version=query.target_version,
            candidates=[(query.target_version, 1.0)],
            meta={"oracle": True},
        )
