"""Behaviour the non-restoring baselines share: they never change memory on rollback."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from chronobench.data.schema import Probe, RollbackQuery, Stream
from chronobench.protocols import GenerationRequest, RollbackOutcome
from chronobench.systems.base import SystemContext, pack_recent
from chronobench.systems.prompts import qa_request, rollback_instruction, summary_request


class NonRestoringSystem:
    """Keeps the post-exposure memory; subclasses decide what memory a prompt shows."""

    name = "non_restoring"

    def __init__(self, ctx: SystemContext, **kwargs: Any) -> None:
        self.ctx = ctx
        self.budget = int(kwargs.get("context_budget_tokens", 2000))
        self.summary_budget = int(kwargs.get("summary_budget_tokens", self.budget))
        self.stream: Stream | None = None

    def ingest(self, stream: Stream) -> None:
        """Exposure: remember the stream."""
        self.stream = stream

    def rollback(self, query: RollbackQuery) -> RollbackOutcome:
        """No state change: these baselines cannot restore a version."""
        return RollbackOutcome(selected_version=None)

    def answer_directly(self, query: RollbackQuery, probe: Probe) -> str | None:
        """Always goes through the backbone."""
        return None

    def close(self) -> None:
        """Nothing to release."""


class InstructedSystem(NonRestoringSystem, ABC):
    """Shows a fixed view of memory (the most recent texts that fit the budget) and passes
    the rollback request as an instruction; subclasses choose the texts."""

    @abstractmethod
    def memory_texts(self) -> list[str]:
        """The texts this baseline may show, oldest first."""

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest:
        """Memory view + the rollback instruction + the probe."""
        assert self.stream is not None
        # final_qa is asked at the stream's last version, without any rollback request.
        instruction = None if probe.kind == "final_qa" else rollback_instruction(query.text)
        if probe.kind == "summary":
            items = pack_recent(self.memory_texts(), self.summary_budget)
            return summary_request(probe.question, items, self.ctx.params, instruction=instruction)
        items = pack_recent(self.memory_texts(), self.budget)
        return qa_request(probe.question, items, self.ctx.params, instruction=instruction)
