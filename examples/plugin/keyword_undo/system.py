"""A memory system that rolls back by keyword overlap: a worked plug-in example.

It finds the write whose text shares the most words with the request, then keeps the
memory as it was right after that write ("go back to ...") or right before it ("undo
...", "forget ..."). Under chronobench's sealed protocol (docs/protocol.md) it is handed
only what a deployed agent would have: the stream's writes, the request text and the
question texts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from chronobench.protocols import Question, Reply, RollbackOutcome, StreamWrite
from chronobench.systems.prompts import is_summary_request, qa_request, summary_request

_WORD = re.compile(r"[a-z0-9']+")
_UNDO = {"undo", "forget", "remove", "delete", "erase", "drop", "revert", "discard"}
_STOP = {"the", "a", "an", "to", "of", "in", "on", "and", "or", "we", "you", "i", "my", "your"}


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _STOP


def _state(writes: Sequence[StreamWrite]) -> list[str]:
    """The memory texts alive after ``writes``, oldest first."""
    alive: dict[str, str] = {}
    for write in writes:
        for change in write.changes:
            alive.pop(change.item_id, None)
            if change.op not in ("delete", "redact") and change.text is not None:
                alive[change.item_id] = change.text
    return list(alive.values())


class KeywordUndoSession:
    """One rollback query: ``rollback(request)`` at most once, then ``ask(questions)``."""

    def __init__(self, system: KeywordUndoSystem) -> None:
        self.system = system
        self.kept = _state(system.writes)  # no rollback: the stream's last version

    def rollback(self, request: str) -> RollbackOutcome:
        """Restore the version the request's words point at (0 = empty memory)."""
        writes = self.system.writes
        if not writes:
            self.kept = []
            return RollbackOutcome(selected_version=0)
        asked = _words(request)
        overlap = [len(asked & _words(w.text)) for w in writes]
        best = max(range(len(writes)), key=lambda i: (overlap[i], i))  # ties: the later write
        version = best + 1 - (1 if asked & _UNDO else 0)
        self.kept = _state(writes[:version])
        return RollbackOutcome(selected_version=version, candidates=[(best + 1, overlap[best])])

    def ask(self, questions: Sequence[Question]) -> list[Reply]:
        """One prompt per question over the kept memory (the system decides from the
        text whether it is asked for a summary)."""
        items = self.kept[-self.system.window :]
        params = self.system.ctx.params
        return [
            Reply(
                q.question_id,
                request=summary_request(q.text, items, params)
                if is_summary_request(q.text)
                else qa_request(q.text, items, params),
            )
            for q in questions
        ]

    def close(self) -> None:
        """Nothing to release."""


class KeywordUndoSystem:
    """:class:`chronobench.protocols.MemorySystem` with a keyword-overlap rollback."""

    name = "keyword_undo"

    def __init__(self, ctx: Any, window: int = 20) -> None:
        self.ctx = ctx  # chronobench.systems.SystemContext: sampling params, shared stores
        self.window = window
        self.writes: Sequence[StreamWrite] = ()

    def ingest(self, writes: Sequence[StreamWrite]) -> None:
        """Exposure: every write of the stream (write ids 1..n)."""
        self.writes = writes

    def open_session(self) -> KeywordUndoSession:
        """A session per rollback query (and one, never rolled back, for questions about
        the stream's last version)."""
        return KeywordUndoSession(self)

    def close(self) -> None:
        """Nothing to release."""
