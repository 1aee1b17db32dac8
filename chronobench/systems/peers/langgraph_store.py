"""LangGraph long-term store (``SqliteStore`` with a local embedding function).

Native: items are ``put`` under one namespace, key = item id, value = the text plus the
write's version, indexed by the store's own vector search (``index={"dims", "embed",
"fields"}`` with the packaged MiniLM); search is ``store.search(namespace, query=...)``.

Emulated: rollback. A LangGraph store keeps only the current value of a key, no history,
so the adapter deletes every item whose recorded version is after the target. That can
undo additions only: an overwritten value is gone for good (the adapter says so by
the benchmark's streams are add-only, so it never arises here).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from chronobench.systems.peers.base import (
    VERSION_KEY,
    Memory,
    PeerWrite,
    RollbackInfo,
    folder_bytes,
)

NAMESPACE = ("chronobench", "memories")
_LIST_PAGE = 1000


def _connect(path: Path) -> Any:
    """A SQLite connection that can load sqlite-vec (the store's vector index).

    Some CPython builds (this project's machines among them) compile ``sqlite3`` without
    extension loading; ``pysqlite3-binary`` (in the extra) is the same API with it.
    """
    probe = sqlite3.connect(":memory:")
    can_load = hasattr(probe, "enable_load_extension")
    probe.close()
    if can_load:
        return sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        import pysqlite3  # type: ignore[import-not-found]
    except ImportError as exc:
        raise ImportError(
            "langgraph_store: this Python's sqlite3 cannot load extensions (sqlite-vec); "
            "pip install 'chronobench[peers-langgraph]' brings pysqlite3-binary"
        ) from exc
    return pysqlite3.connect(str(path), check_same_thread=False, isolation_level=None)


class LangGraphStorePeer:
    """Memories in a LangGraph ``SqliteStore``; rollback emulated by deleting newer items."""

    name = "langgraph_store"
    native_rollback = False
    native_search = True

    def __init__(self, workdir: str | Path, embedding: Any) -> None:
        from langgraph.store.sqlite import SqliteStore

        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._conn = _connect(self.workdir / "store.sqlite")
        self.store = SqliteStore(
            self._conn,
            index={"dims": embedding.dims, "embed": embedding.embed_fn, "fields": ["text"]},
        )
        self.store.setup()

    def add(self, write: PeerWrite) -> None:
        """One ``PutOp`` per item, in one ``batch`` (one embedding call per write)."""
        from langgraph.store.base import PutOp

        self.store.batch(
            [
                PutOp(
                    NAMESPACE,
                    item_id,
                    {"text": text, VERSION_KEY: write.version, "timestamp": write.timestamp},
                    # Per put: SqliteStore 3.1 ignores index={"fields": ...} (it reads
                    # "text_fields") and would embed the whole JSON value, version included.
                    index=["text"],
                )
                for item_id, text in write.items
            ]
        )

    def _all(self) -> list[Any]:
        items: list[Any] = []
        while True:
            page = self.store.search(NAMESPACE, limit=_LIST_PAGE, offset=len(items))
            items.extend(page)
            if len(page) < _LIST_PAGE:
                return items

    def state(self) -> list[Memory]:
        rows = sorted(self._all(), key=lambda it: (it.value.get(VERSION_KEY, 0), it.created_at))
        return [Memory(it.key, it.value["text"], it.value.get(VERSION_KEY)) for it in rows]

    def search(self, query: str, k: int) -> list[Memory]:
        hits = self.store.search(NAMESPACE, query=query, limit=k)
        return [
            Memory(h.key, h.value["text"], h.value.get(VERSION_KEY), float(h.score or 0.0))
            for h in hits
        ]

    def rollback_to(self, version: int) -> RollbackInfo:
        """Emulated: delete the items written after ``version`` (no history to restore)."""
        from langgraph.store.base import PutOp

        doomed = [it.key for it in self._all() if int(it.value.get(VERSION_KEY, 0)) > version]
        if doomed:
            # value=None is the store's delete.
            self.store.batch([PutOp(NAMESPACE, key, None) for key in doomed])
        return RollbackInfo(
            False,
            "adapter deletes items with a later version (store has no history)",
            {"deleted": len(doomed)},
        )

    def delete(self, memories: list[Memory]) -> None:
        """The store's own delete (``store.delete(namespace, key)``), by item key: the
        optional forget method of the peer interface (RQ4)."""
        for m in memories:
            if m.item_id is not None:
                self.store.delete(NAMESPACE, m.item_id)

    def storage_bytes(self) -> int:
        return folder_bytes(self.workdir)

    def close(self) -> None:
        self._conn.close()
