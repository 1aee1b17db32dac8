"""A memory system that rolls back by keyword overlap: a worked plug-in example.

It finds the write whose text shares the most words with the request, then keeps the
memory as it was right after that write ("go back to ...") or right before it ("undo
...", "forget ..."). It reads only what a deployed agent would: the request's text,
never the benchmark's gold (``query.target_version``, ``query.anchor``, the probes'
answers).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from chronobench.data.schema import Probe, RollbackQuery, Stream, Write
from chronobench.protocols import GenerationRequest, RollbackOutcome
from chronobench.systems.prompts import qa_request, summary_request

_WORD = re.compile(r"[a-z0-9']+")
_UNDO = {"undo", "forget", "remove", "delete", "erase", "drop", "revert", "discard"}
_STOP = {"the", "a", "an", "to", "of", "in", "on", "and", "or", "we", "you", "i", "my", "your"}


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _STOP


def _state(writes: Sequence[Write]) -> list[str]:
    """The memory texts alive after ``writes``, oldest first."""
    alive: dict[str, str] = {}
    for write in writes:
        for op in write.ops:
            alive.pop(op.item_id, None)
            if op.op not in ("delete", "redact") and op.text is not None:
                alive[op.item_id] = op.text
    return list(alive.values())


class KeywordUndoSystem:
    """:class:`chronobench.protocols.MemorySystem` with a keyword-overlap rollback."""

    name = "keyword_undo"

    def __init__(self, ctx: Any, window: int = 20) -> None:
        self.ctx = ctx  # chronobench.systems.SystemContext: sampling params, shared stores
        self.window = window
        self.stream: Stream | None = None
        self.kept: list[str] = []

    def ingest(self, stream: Stream) -> None:
        """Exposure: every write of the stream (versions 1..n)."""
        self.stream = stream

    def rollback(self, query: RollbackQuery) -> RollbackOutcome:
        """Restore the version the request's words point at (0 = empty memory)."""
        assert self.stream is not None
        asked = _words(query.text)
        writes = self.stream.writes
        overlap = [len(asked & _words(" ".join(op.text or "" for op in w.ops))) for w in writes]
        if not writes:
            self.kept = []
            return RollbackOutcome(selected_version=0)
        best = max(range(len(writes)), key=lambda i: (overlap[i], i))  # ties: the later write
        version = best + 1 - (1 if asked & _UNDO else 0)
        self.kept = _state(writes[:version])
        return RollbackOutcome(selected_version=version, candidates=[(best + 1, overlap[best])])

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest:
        """The prompt for one probe: the kept memory (the whole memory for final_qa,
        which is asked at the stream's last version)."""
        assert self.stream is not None
        items = _state(self.stream.writes) if probe.kind == "final_qa" else self.kept
        items = items[-self.window :]
        if probe.kind == "summary":
            return summary_request(probe.question, items, self.ctx.params)
        return qa_request(probe.question, items, self.ctx.params)

    def answer_directly(self, query: RollbackQuery, probe: Probe) -> str | None:
        """Every answer goes through the backbone."""
        return None

    def close(self) -> None:
        """Nothing to release."""
