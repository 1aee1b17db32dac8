"""Floors reported in every table, so that a score a trivial policy can earn is visible:
no memory, always abstain, a constant answer, and two content-free RQ3 outputs that
need the oracle channel. The request-blind restore floors and the verbatim-text RQ3
floors are in :mod:`baselines.restore_floors`."""

from __future__ import annotations

from typing import Any

from baselines._common import NonRestoringSystem, RequestSession
from chronobench.protocols import OracleTarget, Question, Reply
from chronobench.systems.base import SystemContext
from chronobench.systems.prompts import (
    ABSTAIN_REPLY,
    is_summary_request,
    qa_request,
    summary_request,
)
from chronobench.systems.registry import ConstantAnswerOptions, NoOptions


class NoMemorySystem(NonRestoringSystem):
    """The question alone, with no memory at all."""

    name = "no_memory"

    def reply(self, question: Question, request: str | None) -> Reply:
        """A prompt with an empty memory."""
        build = summary_request if is_summary_request(question.text) else qa_request
        return Reply(question.question_id, request=build(question.text, [], self.ctx.params))


class AlwaysAbstainSystem(NonRestoringSystem):
    """Answers every question with the abstention reply, without a backbone call."""

    name = "always_abstain"

    def reply(self, question: Question, request: str | None) -> Reply:
        """The abstention reply."""
        return Reply(question.question_id, answer=ABSTAIN_REPLY)


class ConstantAnswerSystem(NonRestoringSystem):
    """Gives the same answer to every question (default "2023", the most frequent year in
    LoCoMo's answers): what guessing alone earns, and how much "leakage" a guess makes."""

    name = "constant_answer"

    def __init__(self, ctx: SystemContext, options: ConstantAnswerOptions) -> None:
        super().__init__(ctx, options)
        self.answer = options.answer

    def reply(self, question: Question, request: str | None) -> Reply:
        """The constant, whatever the question."""
        return Reply(question.question_id, answer=self.answer)


class FloorTextSession(RequestSession):
    """A session that knows the floor text of its query's summary question (or none)."""

    def __init__(self, system: FloorTextSystem, text: str | None) -> None:
        super().__init__(system)
        self.text = text

    def ask(self, questions: Any) -> list[Reply]:
        """The floor text for a summary request, the system's reply otherwise."""
        return [
            Reply(q.question_id, answer=self.text)
            if self.text is not None and is_summary_request(q.text)
            else self.system.reply(q, None)
            for q in questions
        ]


class FloorTextSystem(NonRestoringSystem):
    """RQ3 floor: answers a summary request with a content-free text the builder prepared
    for the query (``OracleTarget.floor_texts[floor]``: it needs v* or other
    conversations, so it comes through the oracle channel; registered ``oracle=True``)
    and abstains on questions."""

    name = "floor_text"
    floor = ""

    def reply(self, question: Question, request: str | None) -> Reply:
        """Without the floor text, abstain (protocol 3 asks every query the summary
        request; a query scores it only where it has a reference, and then the oracle
        channel holds the text)."""
        return Reply(question.question_id, answer=ABSTAIN_REPLY)

    def open_session(self) -> FloorTextSession:
        """A session without the floor text (it abstains on every question)."""
        return FloorTextSession(self, None)

    def open_oracle_session(self, target: OracleTarget) -> FloorTextSession:
        """A session holding the floor text of the target's summary question."""
        text = target.floor_texts.get(self.floor)
        return FloorTextSession(self, None if text is None else str(text))


class SessionDatesFloor(FloorTextSystem):
    """RQ3 floor: the list of session dates up to v*."""

    name = "floor_session_dates"
    floor = "session_dates"


class GenericWordsFloor(FloorTextSystem):
    """RQ3 floor: the speakers' names plus the most frequent content words of the
    other conversations' event summaries."""

    name = "floor_generic_words"
    floor = "generic_words"


class AlwaysYesFloor(ConstantAnswerSystem):
    """Recall floor: "Yes" to every question (every true recall statement right)."""

    name = "floor_always_yes"

    def __init__(self, ctx: SystemContext, options: NoOptions) -> None:
        super().__init__(ctx, ConstantAnswerOptions(answer="Yes"))


class AlwaysNoFloor(ConstantAnswerSystem):
    """Recall floor: "No" to every question (every false recall statement right)."""

    name = "floor_always_no"

    def __init__(self, ctx: SystemContext, options: NoOptions) -> None:
        super().__init__(ctx, ConstantAnswerOptions(answer="No"))
