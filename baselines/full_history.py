"""Full-history prompting: the whole stream in the prompt plus an "answer as of" instruction."""

from __future__ import annotations

from baselines._common import NonRestoringSystem
from chronobench.data.schema import Probe, RollbackQuery
from chronobench.protocols import GenerationRequest
from chronobench.systems.base import all_written_texts, pack_recent
from chronobench.systems.prompts import qa_request, rollback_instruction, summary_request


class FullHistorySystem(NonRestoringSystem):
    """Every write in order (the oldest dropped first when over the budget, as a context
    window would), and the instruction to answer as of the point the request describes."""

    name = "full_history"

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest:
        """The transcript + the rollback instruction + the probe."""
        assert self.stream is not None
        texts = all_written_texts(self.stream)
        instruction = rollback_instruction(query.text)
        if probe.kind == "summary":
            items = pack_recent(texts, self.summary_budget)
            return summary_request(probe.question, items, self.ctx.params, instruction=instruction)
        items = pack_recent(texts, self.budget)
        return qa_request(probe.question, items, self.ctx.params, instruction=instruction)
