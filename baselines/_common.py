"""Behaviour the non-restoring baselines share: they never change memory on rollback."""

from __future__ import annotations

from typing import Any

from chronobench.data.schema import Probe, RollbackQuery, Stream
from chronobench.protocols import RollbackOutcome
from chronobench.systems.base import SystemContext


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
