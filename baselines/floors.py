"""Floors reported in every table, so that a score abstention alone can earn is visible."""

from __future__ import annotations

from baselines._common import NonRestoringSystem
from chronobench.data.schema import Probe, RollbackQuery
from chronobench.protocols import GenerationRequest
from chronobench.systems.prompts import ABSTAIN_REPLY, qa_request, summary_request


class NoMemorySystem(NonRestoringSystem):
    """The question alone, with no memory at all."""

    name = "no_memory"

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest:
        """A prompt with an empty memory."""
        if probe.kind == "summary":
            return summary_request(probe.question, [], self.ctx.params)
        return qa_request(probe.question, [], self.ctx.params)


class AlwaysAbstainSystem(NonRestoringSystem):
    """Answers every probe with the abstention reply, without a backbone call."""

    name = "always_abstain"

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest:
        """The empty-memory prompt (the runner never sends it: answer_directly answers)."""
        return qa_request(probe.question, [], self.ctx.params)

    def answer_directly(self, query: RollbackQuery, probe: Probe) -> str | None:
        """The abstention reply."""
        return ABSTAIN_REPLY
