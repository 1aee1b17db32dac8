"""The small interfaces everything plugs into.

- :class:`MemorySystem` (with its :class:`Session`): ChronoMem and every baseline; a
  user can register their own. It sees what a deployed agent would: the stream's
  writes (:class:`StreamWrite`), then per rollback query a session that gets the
  request text and the questions (:class:`Question`, text only, opaque ids).
- :class:`OracleSystem`: a system registered as an oracle also receives the gold target
  (:class:`OracleTarget`) through a separate call; no other system ever does.
- :class:`Backbone`: generates a batch of chat prompts, one :class:`Completion` each.
- :class:`Selector`: maps rollback requests to ranked versions (RQ1), BEIR-shaped, over
  the same public writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from chronobench.data.schema import Stream
from chronobench.spec import PROTOCOL_VERSION  # every manifest records it

# The generation types are the store's (its backbone resolver sends and reads them).
from chronomem.generation import ChatMessage as ChatMessage  # re-exported
from chronomem.generation import Completion as Completion  # re-exported
from chronomem.generation import GenerationParams as GenerationParams  # re-exported
from chronomem.generation import GenerationRequest as GenerationRequest  # re-exported
from chronomem.generation import as_completion as as_completion  # re-exported

__all__ = [
    "PROTOCOL_VERSION",
    "Backbone",
    "ChatMessage",
    "Completion",
    "GenerationParams",
    "GenerationRequest",
    "ItemChange",
    "MemorySystem",
    "OracleSystem",
    "OracleTarget",
    "Question",
    "RefusingSelector",
    "Reply",
    "RollbackOutcome",
    "Selector",
    "Session",
    "StreamWrite",
    "as_completion",
    "public_writes",
]


@runtime_checkable
class Backbone(Protocol):
    """Generates one completion per request of a batch, in order."""

    name: str
    model: str

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]: ...


@runtime_checkable
class Selector(Protocol):
    """Ranks the versions of one stream for each rollback request (RQ1)."""

    name: str

    def search(
        self, writes: Sequence[StreamWrite], queries: dict[str, str], top_k: int
    ) -> dict[str, list[tuple[int, float]]]:
        """Return ``{request_id: [(write_id, score), ...]}``, best first; ``queries`` maps
        opaque request ids to request texts."""
        ...


@runtime_checkable
class RefusingSelector(Protocol):
    """A selector that can refuse a request (rank nothing) and say why."""

    #: ``{request_id: reason}`` for the requests of the last ``search`` it refused.
    refusals: Mapping[str, str]


# ---- what a memory system sees: the public view of a stream ---------------------------


def _frozen(value: Any) -> Any:
    """A read-only copy of a label value (lists become tuples, mappings read-only)."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class ItemChange:
    """One memory item changed by a write: ``op`` is ``add``, ``update``, ``delete``,
    ... (as the stream wrote it), ``text`` None for a delete; ``author`` is who said it
    when the stream says (a chat message's speaker)."""

    op: str
    item_id: str
    text: str | None
    author: str | None = None


@dataclass(frozen=True)
class StreamWrite:
    """One memory write exactly as a deployed agent saw it happen.

    ``write_id`` is its position on the stream (1-based): restoring ``write_id`` j means
    the state right after it (0: the empty memory). ``timestamp`` is when it happened
    (when the stream knows), ``labels`` the timeline position its writer gave it (session
    number, session date, message ids, chunk index), ``summary`` an optional commit
    summary. No probe, answer or dataset meta field is here.
    """

    write_id: int
    timestamp: str | None
    changes: tuple[ItemChange, ...]
    labels: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    summary: str | None = None

    @property
    def text(self) -> str:
        """The texts of the write's changes, one per line."""
        return "\n".join(c.text for c in self.changes if c.text)


def public_writes(stream: Stream) -> tuple[StreamWrite, ...]:
    """The public view of ``stream``: what the runner hands every system and selector."""
    return tuple(
        StreamWrite(
            write_id=w.version,
            timestamp=w.valid_time,
            changes=tuple(
                ItemChange(
                    op=op.op,
                    item_id=op.item_id,
                    text=op.text,
                    author=str(op.meta["speaker"]) if op.meta.get("speaker") else None,
                )
                for op in w.ops
            ),
            labels=_frozen(dict(w.labels)),
            summary=w.summary,
        )
        for w in stream.writes
    )


@dataclass(frozen=True)
class Question:
    """A question asked in a session: its text only. ``question_id`` is opaque (unique
    within one :meth:`Session.ask` call; it says nothing about the question)."""

    question_id: str
    text: str


@dataclass(frozen=True)
class Reply:
    """A system's reply to one :class:`Question`: a final ``answer`` text, or a
    ``request`` for the run's backbone (whose completion is then the answer)."""

    question_id: str
    answer: str | None = None
    request: GenerationRequest | None = None

    def __post_init__(self) -> None:
        if (self.answer is None) == (self.request is None):
            raise ValueError(f"Reply {self.question_id!r}: give exactly one of answer= or request=")


@dataclass
class RollbackOutcome:
    """What a system did with a rollback request: the write id it restored (None when it
    does not restore state), ranked candidates when it has them, and free-form notes
    for the sample rows."""

    selected_version: int | None
    candidates: list[tuple[int, float]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OracleTarget:
    """The oracle channel: the gold of one rollback query, handed only to systems
    registered with ``oracle=True`` (:func:`chronobench.systems.register_system`),
    through :meth:`OracleSystem.open_oracle_session`.

    ``target_version`` is the gold v* (a write id); ``floor_texts`` the content-free
    texts the dataset builder prepared for the query's summary question (the RQ3 floor
    rows need v* or other conversations, which no system sees).
    """

    target_version: int
    floor_texts: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@runtime_checkable
class Session(Protocol):
    """One conversation with the system after exposure, starting from the post-exposure
    state (HEAD). The runner calls ``rollback`` at most once, before ``ask``; ``ask``
    once with every question of the session (shuffled); then ``close``. A session
    without ``rollback`` is the agent at the stream's last version, no rollback (how
    ``final_qa`` questions are asked)."""

    def rollback(self, request: str) -> RollbackOutcome: ...

    def ask(self, questions: Sequence[Question]) -> list[Reply]: ...

    def close(self) -> None: ...


@runtime_checkable
class MemorySystem(Protocol):
    """A memory system under the post-exposure protocol.

    The runner calls ``ingest`` once per stream with its public writes, then per
    rollback query: ``open_session()``, ``session.rollback(request_text)``,
    ``session.ask(questions)``, ``session.close()``; the query's questions about the
    stream's last version come afterwards in a new session without a rollback. Summary
    requests are questions too: the system decides from the text what it is asked.
    """

    name: str

    def ingest(self, writes: Sequence[StreamWrite]) -> None: ...

    def open_session(self) -> Session: ...

    def close(self) -> None: ...


@runtime_checkable
class OracleSystem(MemorySystem, Protocol):
    """A system registered as an oracle: its rollback session is opened with the gold
    target instead of ``open_session()`` (the request text still follows)."""

    def open_oracle_session(self, target: OracleTarget) -> Session: ...
