"""Prompt-only rollback: memory is unchanged, the request is only an instruction."""

from __future__ import annotations

from baselines._common import NonRestoringSystem
from chronobench.data.schema import Probe, RollbackQuery
from chronobench.protocols import GenerationRequest
from chronobench.systems.base import final_state, pack_recent
from chronobench.systems.prompts import qa_request, rollback_instruction, summary_request


class PromptOnlySystem(NonRestoringSystem):
    """The agent's default view of memory (the most recent items that fit the budget)
    plus an instruction to ignore everything after the described point."""

    name = "prompt_only"

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest:
        """Recent final-state items + the rollback instruction + the probe."""
        assert self.stream is not None
        texts = [text for _, text in final_state(self.stream)]
        instruction = rollback_instruction(query.text)
        if probe.kind == "summary":
            items = pack_recent(texts, self.summary_budget)
            return summary_request(probe.question, items, self.ctx.params, instruction=instruction)
        items = pack_recent(texts, self.budget)
        return qa_request(probe.question, items, self.ctx.params, instruction=instruction)
