"""RAG-only: retrieval over the final state, no version restoration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from baselines._common import NonRestoringSystem
from chronobench.protocols import Question, Reply, StreamWrite
from chronobench.systems.base import APP, SystemContext, pack_ranked
from chronobench.systems.prompts import is_summary_request, qa_request, summary_request
from chronobench.systems.registry import RetrievalOptions

#: Reciprocal-rank-fusion constant for the question's and the request's hit lists.
RRF_K0 = 60


class RagOnlySystem(NonRestoringSystem):
    """The top-k items of the post-exposure memory for the question and for the rollback
    request, fused by reciprocal rank (the question alone in a session without a
    request); the same item retriever ChronoMem reads with, so the two rows differ only
    by restoration.

    Why two searches, not one for "request + question": every query of a stream asks the
    same battery (protocol 3), so a joint text would be a new search text (and a new
    embedding) per question and query; the question's hits are searched once per stream
    and the request's once per session."""

    name = "rag_only"

    def __init__(self, ctx: SystemContext, options: RetrievalOptions) -> None:
        super().__init__(ctx, options)
        self.top_k = options.top_k_items
        self.budget = options.context_budget_tokens
        self.summary_budget = options.summary_budget_tokens
        self._ingested: Any = None
        self._hits: dict[str, list[Any]] = {}

    def ingest(self, writes: Sequence[StreamWrite]) -> None:
        """Exposure: the shared post-exposure store of the stream."""
        super().ingest(writes)
        self._ingested = self.ctx.stores.get(writes)
        self._hits = {}  # text -> hits, for this stream's memory (it never changes)

    def _search(self, text: str) -> list[Any]:
        if text not in self._hits:
            ing = self._ingested
            self._hits[text] = ing.store.search(APP, ing.user, text, k=self.top_k)
        return self._hits[text]

    def prepare(self, questions: Sequence[Question], request: str | None) -> None:
        """The session's new search vectors in one embedder call (the same vectors)."""
        texts = [q.text for q in questions if q.text not in self._hits]
        if request is not None and request not in self._hits:
            texts.append(request)
        self._ingested.store.warm_queries(texts)

    def _fused(self, question: str, request: str | None) -> list[str]:
        lists = [self._search(question)] + ([self._search(request)] if request else [])
        if len(lists) == 1:
            return [h.text for h in lists[0]]
        score: dict[str, float] = {}
        text: dict[str, str] = {}
        first: dict[str, tuple[int, int]] = {}
        for li, hits in enumerate(lists):
            for rank, h in enumerate(hits, start=1):
                score[h.item_id] = score.get(h.item_id, 0.0) + 1.0 / (RRF_K0 + rank)
                text[h.item_id] = h.text
                first.setdefault(h.item_id, (rank, li))
        # Ties: the better first rank, then the question's list.
        order = sorted(score, key=lambda i: (-score[i], first[i], i))
        return [text[i] for i in order[: self.top_k]]

    def reply(self, question: Question, request: str | None) -> Reply:
        """Retrieve for the question and the request (see the class docstring), then
        prompt."""
        texts = self._fused(question.text, request)
        if is_summary_request(question.text):
            items = pack_ranked(texts, self.summary_budget)
            req = summary_request(question.text, items, self.ctx.params)
        else:
            items = pack_ranked(texts, self.budget)
            req = qa_request(question.text, items, self.ctx.params)
        return Reply(question.question_id, request=req)
