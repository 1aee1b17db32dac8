"""Floors that never roll back and split the battery by something other than the
request (docs/metrics.md, RQ2 floors; the RQ2 audit runs their ideal forms).

- :class:`SessionParityFloor` reads as ChronoMem does over the whole stream, but only
  the questions whose words best match an even session (first, third, ...); it abstains
  on the rest. With only the two boundary sessions scored, such a policy scored on every
  query whose v* had the right parity; the far probes score it on every session.
- :class:`FalsifierRuleFloor` answers a recall statement "No" when one of its content
  words occurs in the conversation but never in a turn its subject speaks or that names
  them (the false statements' construction rule, read backwards), "Yes" otherwise, and
  abstains on every other question.
"""

from __future__ import annotations

from collections.abc import Sequence

from baselines._common import NonRestoringSystem
from baselines.question_floors import SessionMatcher
from chronobench.metrics.content import content_stems
from chronobench.protocols import Question, Reply, RollbackOutcome, StreamWrite
from chronobench.systems.chronomem import ChronoMemSession, ChronoMemSystem
from chronobench.systems.prompts import ABSTAIN_REPLY, is_summary_request

RECALL_PREFIX = "Is it true that"


class _StaySession(ChronoMemSession):
    """Never restores; answers only the questions its system keeps."""

    def rollback(self, request: str) -> RollbackOutcome:
        """No state change: the memory stays at the stream's end."""
        return RollbackOutcome(selected_version=None, meta={"floor": self.system.name})

    def ask(self, questions: Sequence[Question]) -> list[Reply]:
        """ChronoMem's reply to the kept questions, the abstain reply to the others."""
        system: SessionParityFloor = self.system  # type: ignore[assignment]
        kept = [q for q in questions if system.keeps(q.text)]
        read = dict(zip([q.question_id for q in kept], super().ask(kept), strict=True))
        return [read.get(q.question_id) or Reply(q.question_id, answer=ABSTAIN_REPLY)
                for q in questions]  # fmt: skip


class SessionParityFloor(ChronoMemSystem):
    """Answers the questions of even sessions (by their words), abstains on the others,
    never rolls back (see the module docstring)."""

    name = "floor_session_parity"

    def ingest(self, writes: Sequence[StreamWrite]) -> None:
        """Exposure, and the sessions' words for mapping questions to sessions."""
        super().ingest(writes)
        self._matcher = SessionMatcher(writes)

    def keeps(self, text: str) -> bool:
        """Whether the question is answered: the summary request and questions whose
        best-matching session has an even index (0, 2, ...)."""
        if is_summary_request(text):
            return True
        where = self._matcher.best(text)
        return where is not None and where % 2 == 0

    def open_session(self) -> ChronoMemSession:
        """A session that never restores."""
        return _StaySession(self, None)


class FalsifierRuleFloor(NonRestoringSystem):
    """The false statements' construction rule read backwards (see the module)."""

    name = "floor_falsifier_rule"

    def ingest(self, writes: Sequence[StreamWrite]) -> None:
        """Exposure: the content stems of every turn, and of each speaker's turns (those
        they speak or that name them)."""
        super().ingest(writes)
        self._all: set[str] = set()
        self._with: dict[str, set[str]] = {}
        for w in writes:
            for c in w.changes:
                text = c.text or ""
                stems = content_stems(text)
                self._all |= stems
                speaker = text.split("] ", 1)[-1].split(":", 1)[0].strip()
                if speaker and len(speaker.split()) <= 3:
                    self._with.setdefault(speaker, set()).update(stems)
        for name in list(self._with):
            for w in writes:
                for c in w.changes:
                    if name.lower() in (c.text or "").lower():
                        self._with[name] |= content_stems(c.text or "")

    def reply(self, question: Question, request: str | None) -> Reply:
        """The rule's verdict on a recall statement, the abstain reply otherwise."""
        text = question.text
        if not text.startswith(RECALL_PREFIX):
            return Reply(question.question_id, answer=ABSTAIN_REPLY)
        statement = text[len(RECALL_PREFIX) :].strip().rstrip("?")
        subjects = [n for n in self._with if n in statement]
        stems = content_stems(statement, list(self._with)) & self._all
        false = any(stems - self._with[n] for n in subjects)
        return Reply(question.question_id, answer="No" if false else "Yes")
