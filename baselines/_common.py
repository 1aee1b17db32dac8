"""Behaviour the non-restoring baselines share: they never change memory on rollback."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from chronobench.protocols import GenerationRequest, Question, Reply, RollbackOutcome, StreamWrite
from chronobench.systems.base import SystemContext, pack_recent
from chronobench.systems.prompts import (
    is_summary_request,
    qa_request,
    rollback_instruction,
    summary_request,
)
from chronobench.systems.registry import BudgetOptions, NoOptions


class RequestSession:
    """A session of a system that keeps its memory as it is: ``rollback`` only
    remembers the request text, and every question is answered by the system's
    ``reply(question, request)`` (``request`` None: no rollback in this session)."""

    def __init__(self, system: NonRestoringSystem) -> None:
        self.system = system
        self.request: str | None = None

    def rollback(self, request: str) -> RollbackOutcome:
        """No state change: these systems cannot restore a version."""
        self.request = request
        return RollbackOutcome(selected_version=None)

    def ask(self, questions: Sequence[Question]) -> list[Reply]:
        """The system's reply to each question (after its :meth:`prepare`)."""
        self.system.prepare(questions, self.request)
        return [self.system.reply(q, self.request) for q in questions]

    def close(self) -> None:  # noqa: B027 - an optional hook: these systems hold nothing
        """Nothing to release."""


class NonRestoringSystem(ABC):
    """Keeps the post-exposure memory; subclasses decide what each reply holds."""

    name = "non_restoring"

    def __init__(self, ctx: SystemContext, options: NoOptions) -> None:
        self.ctx = ctx
        self.writes: Sequence[StreamWrite] = ()

    def ingest(self, writes: Sequence[StreamWrite]) -> None:
        """Exposure: remember the writes."""
        self.writes = writes

    def open_session(self) -> RequestSession:
        """A session over the unchanged memory."""
        return RequestSession(self)

    def prepare(self, questions: Sequence[Question], request: str | None) -> None:  # noqa: B027
        """Work shared by the replies to ``questions`` (an optional hook; none here)."""

    @abstractmethod
    def reply(self, question: Question, request: str | None) -> Reply:
        """The reply to ``question`` (``request``: the session's rollback request text)."""

    def close(self) -> None:  # noqa: B027 - an optional hook: these systems hold nothing
        """Nothing to release."""


class InstructedSystem(NonRestoringSystem, ABC):
    """Shows a fixed view of memory (the most recent texts that fit the budget) and passes
    the rollback request as an instruction; subclasses choose the texts."""

    @abstractmethod
    def memory_texts(self) -> list[str]:
        """The texts this baseline may show, oldest first."""

    def reply(self, question: Question, request: str | None) -> Reply:
        """Memory view + the rollback instruction (when the session has one) + the question."""
        return Reply(question.question_id, request=self._prompt(question.text, request))

    def __init__(self, ctx: SystemContext, options: BudgetOptions) -> None:
        super().__init__(ctx, options)
        self.budget = options.context_budget_tokens
        self.summary_budget = options.summary_budget_tokens
        self._views: dict[int, list[str]] = {}  # budget -> packed view of self.writes

    def ingest(self, writes: Sequence[StreamWrite]) -> None:
        """Exposure: remember the writes (and forget the views packed from older ones)."""
        super().ingest(writes)
        self._views.clear()

    def _view(self, budget: int) -> list[str]:
        """The most recent memory texts that fit ``budget``: the memory stays as ingested,
        so each budget's view is packed once per stream, not once per question."""
        if budget not in self._views:
            self._views[budget] = pack_recent(self.memory_texts(), budget)
        return list(self._views[budget])

    def _prompt(self, text: str, request: str | None) -> GenerationRequest:
        instruction = rollback_instruction(request) if request is not None else None
        if is_summary_request(text):
            items = self._view(self.summary_budget)
            return summary_request(text, items, self.ctx.params, instruction=instruction)
        items = self._view(self.budget)
        return qa_request(text, items, self.ctx.params, instruction=instruction)
