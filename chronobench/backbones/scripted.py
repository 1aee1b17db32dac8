"""A backbone that answers from a script: for tests where generation is not under test."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from chronobench.metrics.text import ABSTAIN_TEXT
from chronobench.protocols import Completion, GenerationRequest

__all__ = ["ScriptedBackbone"]


class ScriptedBackbone:
    """Answers each request from ``responses``.

    ``responses`` is either a callable ``request -> str`` or a mapping looked up first by
    ``request.question`` and then by the content of the last message; requests matching
    nothing get ``default`` (the abstain text). Every request seen is kept in
    ``self.requests`` and every ``generate`` call's size in ``self.batch_sizes``.
    """

    name = "scripted"

    def __init__(
        self,
        responses: Mapping[str, str] | Callable[[GenerationRequest], str] | None = None,
        default: str = ABSTAIN_TEXT,
        model: str = "scripted",
    ) -> None:
        self.responses = responses if responses is not None else {}
        self.default = default
        self.model = model
        self.requests: list[GenerationRequest] = []
        self.batch_sizes: list[int] = []

    def _answer(self, request: GenerationRequest) -> str:
        if callable(self.responses):
            return self.responses(request)
        if request.question in self.responses:
            return self.responses[request.question]
        if request.messages and request.messages[-1].content in self.responses:
            return self.responses[request.messages[-1].content]
        return self.default

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Return the scripted answer for each request, in order."""
        self.requests.extend(requests)
        self.batch_sizes.append(len(requests))
        return [Completion(self._answer(r)) for r in requests]
