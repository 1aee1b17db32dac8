"""What the backbone resolver sends a language model and reads back.

The resolver (:mod:`chronomem.backbone_resolver`) calls ``backbone.generate(requests)``
on any object with that method; these are the request and reply types it uses. The
benchmark's backbones take the same types (``chronobench.protocols`` re-exports them).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ChatMessage", "Completion", "GenerationParams", "GenerationRequest", "as_completion"]


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
        "chronomem.generation.Completion (or str) per request"
    )
