"""OpenAI Agents SDK sessions: the transcript as memory (``AdvancedSQLiteSession``).

Native: each memory item is one user message appended with ``add_items`` to a SQLite
session (the SDK's ``SQLiteSession`` plus branching: ``AdvancedSQLiteSession`` from
``agents.extensions.memory``); a user message is a turn. Rollback is the SDK's branching:
``create_branch_from_turn(t)`` copies the current branch's turns before ``t`` into a new
branch and switches to it, so restoring version ``v`` branches from the first turn of
write ``v + 1``. The old branch stays in the file (switchable, its text on disk).
``pop_item`` (plain ``SQLiteSession``) is the fallback when branching is missing.

Adapter: the turn number where each write starts (from ``get_conversation_turns``
after the write) and the search. The SDK's only lookup is ``find_turns_by_content``, a
substring match meant for a user's exact words, not a retriever, so search is the
adapter's dense top-k over ``get_items()`` of the current branch.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from chronobench.systems.peers.base import (
    Bookkeeping,
    DenseIndex,
    Memory,
    PeerWrite,
    RollbackInfo,
    folder_bytes,
)

SESSION = "chronobench"


class OpenAIAgentsSessionPeer:
    """Memories as the user messages of an Agents SDK SQLite session."""

    name = "openai_agents_session"
    native_rollback = True
    native_search = False

    def __init__(self, workdir: str | Path, embedding: Any) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._loop = asyncio.new_event_loop()
        try:
            from agents.extensions.memory import AdvancedSQLiteSession

            self.session: Any = AdvancedSQLiteSession(
                session_id=SESSION, db_path=self.workdir / "session.sqlite", create_tables=True
            )
            self.branching = True
        except ImportError:  # older SDKs: the plain session, rollback by pop_item
            from agents import SQLiteSession

            self.session = SQLiteSession(SESSION, self.workdir / "session.sqlite")
            self.branching = False
        self.index = DenseIndex(embedding)
        self.notes = Bookkeeping(self.workdir)
        # version -> number of user turns after that write (0 -> 0).
        self.notes.data.setdefault("turns", {"0": 0})
        branch = self.notes.data.get("branch")
        if branch and self.branching:
            self._run(self.session.switch_to_branch(branch))

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def add(self, write: PeerWrite) -> None:
        items = [
            {"role": "user", "content": text, "id": item_id, "chronobench_version": write.version}
            for item_id, text in write.items
        ]
        self._run(self.session.add_items(items))
        turns = self.notes.data["turns"]
        turns[str(write.version)] = turns[str(write.version - 1)] + len(items)
        self.notes.save()

    def state(self) -> list[Memory]:
        rows = self._run(self.session.get_items())
        return [
            Memory(r.get("id"), r["content"], r.get("chronobench_version"))
            for r in rows
            if r.get("role") == "user" and isinstance(r.get("content"), str)
        ]

    def search(self, query: str, k: int) -> list[Memory]:
        return self.index.top_k(query, self.state(), k)

    def rollback_to(self, version: int) -> RollbackInfo:
        keep = int(self.notes.data["turns"][str(version)])
        total = len(self.state())
        if keep >= total:
            return RollbackInfo(True, "nothing after the target", {"turns_kept": keep})
        if self.branching:
            branch = self._run(self.session.create_branch_from_turn(keep + 1))
            self.notes.data["branch"] = branch
            self.notes.save()
            return RollbackInfo(
                True,
                "create_branch_from_turn (old branch kept in the file)",
                {"branch": branch, "turns_kept": keep},
            )
        for _ in range(total - keep):
            self._run(self.session.pop_item())
        return RollbackInfo(True, "pop_item until the target", {"popped": total - keep})

    def storage_bytes(self) -> int:
        return folder_bytes(self.workdir)

    def close(self) -> None:
        self.session.close()
        self._loop.close()
