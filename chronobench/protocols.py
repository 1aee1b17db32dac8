"""The three small interfaces everything plugs into.

- :class:`MemorySystem`: ChronoMem and every baseline; a user can register their own.
- :class:`Backbone`: generates a batch of chat prompts, one :class:`Completion` each.
- :class:`Selector`: maps rollback requests to ranked versions (RQ1), BEIR-shaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from chronobench.data.schema import Probe, RollbackQuery, Stream


@dataclass(frozen=True)
class ChatMessage:
    """One chat turn."""

    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class GenerationParams:
    """Sampling parameters; the defaults decode deterministically."""

    max_new_tokens: int = 128
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class GenerationRequest:
    """A prompt for a backbone. ``context`` is the memory text shown to the model and
    ``question`` the task; both are also inside ``messages`` and exposed separately so
    that LLM-free readers (the extractive backbone) can use them."""

    messages: tuple[ChatMessage, ...]
    params: GenerationParams = GenerationParams()
    task: str = "qa"  # "qa" | "summary" | "paraphrase"
    context: tuple[str, ...] = ()
    question: str = ""


@dataclass(frozen=True)
class Completion:
    """What a backbone returns for one request: the text, and the token usage when the
    backbone knows it (None: it does not, e.g. the LLM-free readers; the call cache
    then estimates it)."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def as_completion(output: Completion | str) -> Completion:
    """A backbone's output as a :class:`Completion` (a plain string, as third-party
    backbones written before completions return, has no token usage)."""
    if isinstance(output, Completion):
        return output
    if isinstance(output, str):
        return Completion(output)
    raise TypeError(
        f"a backbone returned {type(output).__name__}; generate() must return one "
        "chronobench.protocols.Completion (or str) per request"
    )


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
        self, stream: Stream, queries: dict[str, str], top_k: int
    ) -> dict[str, list[tuple[int, float]]]:
        """Return ``{query_id: [(version, score), ...]}``, best first."""
        ...


@dataclass
class RollbackOutcome:
    """What a system did with a rollback request."""

    selected_version: int | None  # None when the system does not restore state
    candidates: list[tuple[int, float]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class MemorySystem(Protocol):
    """A memory system under the post-exposure protocol.

    The runner calls ``ingest`` with the whole stream, then ``rollback`` with the
    natural-language request, then ``prepare`` once per probe; the returned request
    goes to the backbone. Systems that never touch the backbone (floors) may return
    a final answer from ``answer_directly``.
    """

    name: str

    def ingest(self, stream: Stream) -> None: ...

    def rollback(self, query: RollbackQuery) -> RollbackOutcome: ...

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest: ...

    def answer_directly(self, query: RollbackQuery, probe: Probe) -> str | None: ...

    def close(self) -> None: ...
