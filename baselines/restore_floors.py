"""Request-blind floors: policies that never read the rollback request.

- Restore floors restore a version chosen without the request (a fixed fraction of the
  stream, version 1, a seeded random version) and then read exactly as ChronoMem does
  (same store, retriever, budgets), so their rows differ from ChronoMem's only in the
  version: a headline they approach is not evidence of reading the request.
- Verbatim-text RQ3 floors answer a summary request with the first N words of session 1,
  or of the whole stream, and abstain on every other question: a summary score they
  approach rewards length, not covering the restored history.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any

from baselines._common import NonRestoringSystem
from chronobench.hashing import sha256_text
from chronobench.protocols import Question, Reply, RollbackOutcome
from chronobench.systems.base import SystemContext
from chronobench.systems.chronomem import ChronoMemSession, ChronoMemSystem
from chronobench.systems.prompts import ABSTAIN_REPLY, is_summary_request
from chronobench.systems.registry import LeadingWordsOptions


class RequestBlindRestoreFloor(ChronoMemSystem, ABC):
    """Restores :meth:`choose`'s version whatever the request says, then reads as
    ChronoMem does."""

    name = "request_blind_restore"

    @abstractmethod
    def choose(self, n: int, request: str) -> int:
        """The write id to restore on a stream of ``n`` writes (``request`` is not read)."""

    def open_session(self) -> ChronoMemSession:
        """A session whose rollback restores :meth:`choose`'s version."""
        return ChronoMemSession(self, self._restore)

    def _restore(self, work: Any, request: str) -> RollbackOutcome:
        n = self.n_writes
        j = max(0, min(n, int(self.choose(n, request))))
        return self.restore_to(work, j, {"floor": self.name})


class FixedFractionFloor(RequestBlindRestoreFloor):
    """Restores the version at a fixed fraction of the stream (rounded, at least 1)."""

    fraction = 0.75

    def choose(self, n: int, request: str) -> int:
        """``round(fraction * n)``, at least write 1."""
        return max(1, int(self.fraction * n + 0.5)) if n else 0


class Fraction60Floor(FixedFractionFloor):
    """Restores 60% of the stream."""

    name = "floor_restore_60"
    fraction = 0.6


class Fraction75Floor(FixedFractionFloor):
    """Restores 75% of the stream."""

    name = "floor_restore_75"
    fraction = 0.75


class Fraction90Floor(FixedFractionFloor):
    """Restores 90% of the stream."""

    name = "floor_restore_90"
    fraction = 0.9


class VersionOneFloor(RequestBlindRestoreFloor):
    """Restores version 1 (the first write only): what over-forgetting earns."""

    name = "floor_restore_v1"

    def choose(self, n: int, request: str) -> int:
        """Write 1."""
        return 1 if n else 0


class RandomVersionFloor(RequestBlindRestoreFloor):
    """Restores a random earlier version, uniform over writes 1..n-1 (1 when n < 2).

    Seeded by the run seed, the stream and a hash of the request text: the text is never
    read for meaning; hashing it only makes each query's draw stable across resumed runs.
    """

    name = "floor_restore_random"

    def choose(self, n: int, request: str) -> int:
        """A seeded draw from 1..n-1."""
        seed = sha256_text(f"{self.ctx.params.seed}\n{self.ingested.digest}\n{request}")
        return random.Random(seed).randint(1, max(1, n - 1)) if n else 0


class LeadingWordsFloor(NonRestoringSystem):
    """RQ3 floor: the first ``n_words`` words of some of the stream's text, verbatim, as
    the summary; abstains on every other question."""

    name = "leading_words"

    def __init__(self, ctx: SystemContext, options: LeadingWordsOptions) -> None:
        super().__init__(ctx, options)
        self.n_words = options.n_words

    @abstractmethod
    def source_texts(self) -> list[str]:
        """The texts whose leading words are the summary, in stream order."""

    def reply(self, question: Question, request: str | None) -> Reply:
        """The leading words for a summary request, the abstain reply otherwise."""
        if not is_summary_request(question.text):
            return Reply(question.question_id, answer=ABSTAIN_REPLY)
        words = " ".join(self.source_texts()).split()
        return Reply(question.question_id, answer=" ".join(words[: self.n_words]))


class Session1WordsFloor(LeadingWordsFloor):
    """The first N words of session 1 (the writes sharing the first write's ``session``
    label; the first write when writes have none)."""

    name = "floor_session1_words"

    def source_texts(self) -> list[str]:
        """The texts of session 1."""
        if not self.writes:
            return []
        first = self.writes[0].labels.get("session")
        chosen = (
            [w for w in self.writes if w.labels.get("session") == first]
            if first is not None
            else [self.writes[0]]
        )
        return [c.text for w in chosen for c in w.changes if c.text]


class StreamWordsFloor(LeadingWordsFloor):
    """The first N words of the whole stream."""

    name = "floor_stream_words"

    def source_texts(self) -> list[str]:
        """Every text, in stream order."""
        return [c.text for w in self.writes for c in w.changes if c.text]
