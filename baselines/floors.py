"""Floors reported in every table, so that a score a trivial policy can earn is visible:
no memory, always abstain, a constant answer, and two content-free RQ3 outputs."""

from __future__ import annotations

from typing import Any

from baselines._common import NonRestoringSystem
from chronobench.data.schema import Probe, RollbackQuery
from chronobench.protocols import GenerationRequest
from chronobench.systems.base import SystemContext
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


class ConstantAnswerSystem(NonRestoringSystem):
    """Gives the same answer to every probe (default "2023", the most frequent year in
    LoCoMo's answers): what guessing alone earns, and how much "leakage" a guess makes."""

    name = "constant_answer"

    def __init__(self, ctx: SystemContext, *, answer: str = "2023", **kwargs: Any) -> None:
        super().__init__(ctx, **kwargs)
        if not isinstance(answer, str) or not answer.strip():
            raise ValueError(f"system.answer={answer!r}: give a non-empty constant answer")
        self.answer = answer

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest:
        """The empty-memory prompt (never sent: answer_directly answers)."""
        return qa_request(probe.question, [], self.ctx.params)

    def answer_directly(self, query: RollbackQuery, probe: Probe) -> str | None:
        """The constant, whatever the probe."""
        return self.answer


class FloorTextSystem(NonRestoringSystem):
    """RQ3 floor: answers "summarise" with a content-free text the builder prepared for
    the probe (``probe.meta["floor_texts"][floor]``; it needs other conversations, which
    a system never sees), and abstains on questions."""

    name = "floor_text"
    floor = ""

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest:
        """The empty-memory prompt (never sent: answer_directly answers)."""
        return qa_request(probe.question, [], self.ctx.params)

    def answer_directly(self, query: RollbackQuery, probe: Probe) -> str | None:
        """The prepared floor text for summary probes, the abstain reply otherwise."""
        if probe.kind != "summary":
            return ABSTAIN_REPLY
        texts = probe.meta.get("floor_texts") or {}
        if self.floor not in texts:
            raise ValueError(
                f"probe {probe.probe_id}: no floor text {self.floor!r} in meta.floor_texts "
                f"(has {sorted(texts)}); rebuild the dataset with this version of chronobench"
            )
        return str(texts[self.floor])


class SessionDatesFloor(FloorTextSystem):
    """RQ3 floor: the list of session dates up to v*."""

    name = "floor_session_dates"
    floor = "session_dates"


class GenericWordsFloor(FloorTextSystem):
    """RQ3 floor: the speakers' names plus the most frequent content words of the
    other conversations' event summaries."""

    name = "floor_generic_words"
    floor = "generic_words"
