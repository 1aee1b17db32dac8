"""RAG-only: retrieval over the final state, no version restoration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from baselines._common import NonRestoringSystem
from chronobench.protocols import Question, Reply, StreamWrite
from chronobench.systems.base import APP, SystemContext, pack_ranked
from chronobench.systems.prompts import is_summary_request, qa_request, summary_request


class RagOnlySystem(NonRestoringSystem):
    """Top-k items of the post-exposure memory for "request + question"; the same item
    retriever ChronoMem reads with, so the two rows differ only by restoration."""

    name = "rag_only"

    def __init__(self, ctx: SystemContext, *, top_k_items: int = 8, **kwargs: Any) -> None:
        super().__init__(ctx, **kwargs)
        self.top_k = top_k_items
        self._ingested: Any = None

    def ingest(self, writes: Sequence[StreamWrite]) -> None:
        """Exposure: the shared post-exposure store of the stream."""
        super().ingest(writes)
        self._ingested = self.ctx.stores.get(writes)

    @staticmethod
    def _query(question: Question, request: str | None) -> str:
        return question.text if request is None else f"{request} {question.text}"

    def prepare(self, questions: Sequence[Question], request: str | None) -> None:
        """The session's search vectors in one embedder call (the same vectors)."""
        self._ingested.store.warm_queries([self._query(q, request) for q in questions])

    def reply(self, question: Question, request: str | None) -> Reply:
        """Retrieve with the request and the question together (the question alone in a
        session without a rollback request), then prompt."""
        ing = self._ingested
        text = self._query(question, request)
        hits = ing.store.search(APP, ing.user, text, k=self.top_k)
        if is_summary_request(question.text):
            items = pack_ranked([h.text for h in hits], self.summary_budget)
            req = summary_request(question.text, items, self.ctx.params)
        else:
            items = pack_ranked([h.text for h in hits], self.budget)
            req = qa_request(question.text, items, self.ctx.params)
        return Reply(question.question_id, request=req)
