"""Floors that read the questions instead of the memory or the request (protocol 3).

- :class:`QuestionDensityFloor` infers a boundary from the questions: it maps each
  question to the session whose public writes its words match best and restores the end
  of the session that, with the one after it, holds the most questions. Under protocol 2
  the questions were drawn around v* and this found it for 99% of the queries; with one
  battery per stream it must score at request-blind level.
- :class:`RecallSurfaceFloor` answers a recall question ("Is it true that ...?") "No"
  when a content word of the statement is missing from the public writes and "Yes"
  otherwise, and abstains on every other question: a false statement must not be spotted
  by its surface.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from baselines._common import NonRestoringSystem
from chronobench.metrics.content import content_stems
from chronobench.protocols import Question, Reply, RollbackOutcome, StreamWrite
from chronobench.systems.chronomem import ChronoMemSession, ChronoMemSystem
from chronobench.systems.prompts import ABSTAIN_REPLY

RECALL_PREFIX = "Is it true that"


def _statement(text: str) -> str | None:
    if not text.startswith(RECALL_PREFIX):
        return None
    return text[len(RECALL_PREFIX) :].strip().rstrip("?")


def sessions_of(writes: Sequence[StreamWrite]) -> dict[Any, tuple[int, frozenset[str]]]:
    """Per ``session`` label: its last write id and the content stems of its texts."""
    stems: dict[Any, set[str]] = {}
    last: dict[Any, int] = {}
    for w in writes:
        key = w.labels.get("session", w.write_id)
        last[key] = w.write_id
        stems.setdefault(key, set()).update(
            content_stems(" ".join(c.text or "" for c in w.changes))
        )
    return {k: (last[k], frozenset(v)) for k, v in stems.items()}


class SessionMatcher:
    """Maps a question to the session whose public writes its words match best
    (idf-weighted overlap of content stems; ties to the earlier session)."""

    def __init__(self, writes: Sequence[StreamWrite]) -> None:
        sessions = sessions_of(writes)
        self.order = sorted(sessions, key=lambda k: sessions[k][0])
        self.last = [sessions[k][0] for k in self.order]
        self.stems = [sessions[k][1] for k in self.order]
        self.df = Counter(t for st in self.stems for t in st)

    def best(self, text: str) -> int | None:
        """Index (in session order) of the best-matching session, None when no word matches."""
        terms = content_stems(text)
        n = len(self.order)
        best, where = 0.0, None
        for i, st in enumerate(self.stems):
            # sorted: a float sum in set order depends on the process's string hashing,
            # and near-ties then break differently from one run to the next
            score = sum(math.log(1 + n / self.df[t]) for t in sorted(terms & st))
            if score > best:
                best, where = score, i
        return where


def densest_boundary(writes: Sequence[StreamWrite], questions: Sequence[str]) -> int:
    """The last write of the session that, with the next one, best matches the most
    questions (:class:`SessionMatcher`; ties to the earlier session)."""
    matcher = SessionMatcher(writes)
    if not matcher.order:
        return 0
    n = len(matcher.order)
    hits: Counter[int] = Counter()
    for text in questions:
        where = matcher.best(text)
        if where is not None:
            hits[where] += 1
    pairs = [(hits[i] + hits.get(i + 1, 0), -i) for i in range(n)]
    _, neg = max(pairs)
    return matcher.last[-neg]


class _DeferredSession(ChronoMemSession):
    """Rolls back when the questions come: the version is chosen from them."""

    def __init__(self, system: QuestionDensityFloor) -> None:
        super().__init__(system, None)
        self._outcome: RollbackOutcome | None = None

    def rollback(self, request: str) -> RollbackOutcome:
        """Remember that a rollback was asked for; the version comes with the questions."""
        if self._outcome is not None:
            raise RuntimeError("a session rolls back once; open a new session for the next")
        self._outcome = RollbackOutcome(selected_version=None, meta={"floor": self.system.name})
        return self._outcome

    def ask(self, questions: Sequence[Question]) -> list[Reply]:
        """Restore the densest boundary of these questions (once), then read as ChronoMem."""
        if self._outcome is not None and self._work is None:
            system: QuestionDensityFloor = self.system  # type: ignore[assignment]
            j = system.choose([q.text for q in questions])
            self._work = system.ingested.store.clone()
            done = system.restore_to(self._work, j, dict(self._outcome.meta))
            # The outcome handed back by rollback() is completed here (the runner records
            # it after the session's questions).
            self._outcome.selected_version = done.selected_version
            self._outcome.candidates = list(done.candidates)
            self._state = ("restored", system.mode, j)
        return super().ask(questions)


class QuestionDensityFloor(ChronoMemSystem):
    """Restores the boundary the questions point to (see the module docstring), then
    reads as ChronoMem does; never reads the request."""

    name = "floor_question_density"

    def ingest(self, writes: Sequence[StreamWrite]) -> None:
        """Exposure, and the stream's public writes for mapping questions to sessions."""
        super().ingest(writes)
        self._writes = list(writes)
        self._choices: dict[tuple[str, ...], int] = {}

    def choose(self, questions: Sequence[str]) -> int:
        """The write id to restore for these questions (memoised per question list)."""
        key = tuple(questions)
        if key not in self._choices:
            self._choices[key] = densest_boundary(self._writes, key)
        return self._choices[key]

    def open_session(self) -> ChronoMemSession:
        """A session that restores when its questions arrive."""
        return _DeferredSession(self)


class RecallSurfaceFloor(NonRestoringSystem):
    """ "No" to a recall statement with a content word the public writes never use, "Yes"
    to the others; abstains on everything else (see the module docstring)."""

    name = "floor_recall_surface"

    def ingest(self, writes: Sequence[StreamWrite]) -> None:
        """Exposure: the content stems of every public write."""
        super().ingest(writes)
        self._stems: set[str] = set()
        for w in writes:
            self._stems |= content_stems(" ".join(c.text or "" for c in w.changes))

    def reply(self, question: Question, request: str | None) -> Reply:
        """The surface verdict on a recall statement, the abstain reply otherwise."""
        statement = _statement(question.text)
        if statement is None:
            return Reply(question.question_id, answer=ABSTAIN_REPLY)
        missing = content_stems(statement) - self._stems
        return Reply(question.question_id, answer="No" if missing else "Yes")
