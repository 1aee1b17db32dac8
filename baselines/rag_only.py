"""RAG-only: retrieval over the final state, no version restoration."""

from __future__ import annotations

from typing import Any

from baselines._common import NonRestoringSystem
from chronobench.data.schema import Probe, RollbackQuery, Stream
from chronobench.protocols import GenerationRequest
from chronobench.systems.base import APP, SystemContext, pack_ranked
from chronobench.systems.prompts import qa_request, summary_request


class RagOnlySystem(NonRestoringSystem):
    """Top-k items of the post-exposure memory for "request + question"; the same item
    retriever ChronoMem reads with, so the two rows differ only by restoration."""

    name = "rag_only"

    def __init__(self, ctx: SystemContext, *, top_k_items: int = 8, **kwargs: Any) -> None:
        super().__init__(ctx, **kwargs)
        self.top_k = top_k_items
        self._ingested: Any = None

    def ingest(self, stream: Stream) -> None:
        """Exposure: the shared post-exposure store of the stream."""
        super().ingest(stream)
        self._ingested = self.ctx.stores.get(stream)

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest:
        """Retrieve with the request and the question together, then prompt."""
        ing = self._ingested
        # final_qa is asked without a rollback request: the question alone.
        text = probe.question if probe.kind == "final_qa" else f"{query.text} {probe.question}"
        hits = ing.store.search(APP, ing.user, text, k=self.top_k)
        budget = self.summary_budget if probe.kind == "summary" else self.budget
        items = pack_ranked([h.text for h in hits], budget)
        if probe.kind == "summary":
            return summary_request(probe.question, items, self.ctx.params)
        return qa_request(probe.question, items, self.ctx.params)
