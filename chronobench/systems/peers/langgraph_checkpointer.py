"""LangGraph checkpointer: memory kept in graph state, one checkpoint per write.

Native: every write is one ``invoke`` of a one-node graph whose state holds the memories
(``durability="exit"``: exactly one checkpoint per invoke, saved by ``SqliteSaver``), and
the checkpoint's metadata carries the write's version (config ``metadata`` is copied into
checkpoint metadata). Rollback is LangGraph's time travel: find the checkpoint tagged
with the target version in ``get_state_history`` and ``update_state`` from it, which
writes a new head checkpoint whose values are the target's (revert-forward).

Not there: truncation. LangGraph can only delete a whole thread; the discarded
checkpoints stay in the database (their text is still on disk) and the history keeps
growing. Search is the adapter's (dense top-k over the head state's memories): a
checkpointer stores state, it does not retrieve.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated, Any, TypedDict

from chronobench.systems.peers.base import (
    VERSION_KEY,
    Bookkeeping,
    DenseIndex,
    Memory,
    PeerWrite,
    RollbackInfo,
    folder_bytes,
)

THREAD = "chronobench"


def _merge(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer of the memories channel: a write adds (or replaces) items by id."""
    out = dict(old or {})
    out.update(new or {})
    return out


class _State(TypedDict):
    memories: Annotated[dict[str, Any], _merge]


def _remember(state: _State) -> dict[str, Any]:
    # The write already reached the channel through the input; nothing else to do.
    return {}


class LangGraphCheckpointerPeer:
    """Memories in LangGraph graph state, checkpointed by ``SqliteSaver``."""

    name = "langgraph_checkpointer"
    native_rollback = True
    native_search = False

    def __init__(self, workdir: str | Path, embedding: Any) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, StateGraph

        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.workdir / "checkpoints.sqlite", check_same_thread=False)
        graph = StateGraph(_State)
        graph.add_node("remember", _remember)
        graph.add_edge(START, "remember")
        graph.add_edge("remember", END)
        self.graph = graph.compile(checkpointer=SqliteSaver(self._conn))
        self.index = DenseIndex(embedding)
        self.notes = Bookkeeping(self.workdir)
        # A reopened folder continues on the thread the notes name (v0 rollbacks switch it).
        thread = self.notes.data.get("thread", THREAD)
        self.config: dict[str, Any] = {"configurable": {"thread_id": thread}}

    def add(self, write: PeerWrite) -> None:
        """One invoke, one checkpoint, tagged with the write's version."""
        memories = {
            item_id: {"text": text, VERSION_KEY: write.version, "timestamp": write.timestamp}
            for item_id, text in write.items
        }
        self.graph.invoke(
            {"memories": memories},
            {**self.config, "metadata": {VERSION_KEY: write.version}},
            durability="exit",
        )

    def _head(self) -> dict[str, Any]:
        return dict(self.graph.get_state(self.config).values.get("memories", {}))

    def state(self) -> list[Memory]:
        return [
            Memory(item_id, m["text"], m.get(VERSION_KEY)) for item_id, m in self._head().items()
        ]

    def search(self, query: str, k: int) -> list[Memory]:
        return self.index.top_k(query, self.state(), k)

    def rollback_to(self, version: int) -> RollbackInfo:
        """Time travel: ``update_state`` from the checkpoint tagged ``version``."""
        if version == 0:
            # No checkpoint holds the empty state (the first one already has write 1); the
            # graph's own way to get there is a new thread, which is what an app would do.
            self.config = {"configurable": {"thread_id": f"{THREAD}-empty"}}
            self.notes.data["thread"] = self.config["configurable"]["thread_id"]
            self.notes.save()
            return RollbackInfo(True, "new thread (v0 has no checkpoint)")
        target = None
        for snap in self.graph.get_state_history(self.config):
            if snap.metadata.get(VERSION_KEY) == version and snap.metadata.get("source") == "loop":
                target = snap
                break
        if target is None:
            raise KeyError(f"langgraph_checkpointer: no checkpoint tagged {VERSION_KEY}={version}")
        # values=None: the new head checkpoint is the target's state, unchanged.
        self.graph.update_state(target.config, None)
        return RollbackInfo(
            True,
            "update_state from the target checkpoint (revert-forward; no truncation)",
            {"checkpoint_id": target.config["configurable"]["checkpoint_id"]},
        )

    def storage_bytes(self) -> int:
        self._conn.commit()
        return folder_bytes(self.workdir)

    def close(self) -> None:
        self._conn.close()
