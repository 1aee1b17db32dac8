"""Mem0 OSS (``mem0ai`` 2.x) with ``infer=False``: no LLM, local embedder, local Qdrant.

Native: ``Memory.add(..., infer=False)`` stores each text as one memory (no extraction),
with the item id and the write's version in its metadata; ``Memory.search`` and
``get_all`` read it; ``Memory.history(memory_id)`` lists each memory's ADD / UPDATE /
DELETE events in Mem0's own SQLite history. Embeddings: Mem0's ``langchain`` embedder
provider over the packaged MiniLM (the same vectors every peer gets); vector store:
Qdrant in local mode on disk. The LLM slot holds a chat model that raises if called,
so any LLM call would fail the run instead of going out.

Emulated: rollback. Mem0 has no version or restore API, so the adapter inverts, newest
first, every history event recorded after the moment write ``v`` finished (the adapter
notes that wall-clock mark per write): ADD -> ``delete``, UPDATE -> ``update`` back to
the old text, DELETE -> ``add`` the old text again. What that leaves behind is measured:
a re-added memory has a new id (``detail["reissued_ids"]``), every inversion appends
history rows (``detail["history_rows"]``), and deleted texts stay in the history file.
"""

from __future__ import annotations

import logging
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from chronobench.systems.peers.base import (
    ITEM_KEY,
    VERSION_KEY,
    Bookkeeping,
    Memory,
    PeerWrite,
    RollbackInfo,
    folder_bytes,
)

USER = "chronobench"
_ALL = 1_000_000  # get_all's top_k: every memory of the user


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _import_mem0(home: Path) -> Any:
    # Read by mem0 at import: no telemetry (it would try the network), config in our folder.
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("MEM0_DIR", str(home))
    import mem0

    # Its "spaCy / fastembed not installed" notices repeat on every Memory(); BM25 and
    # lemmas are optional there, and their absence is recorded in docs/peers.md.
    logging.getLogger("mem0").setLevel(logging.ERROR)
    return mem0


def _langchain_parts(embedding: Any) -> tuple[Any, Any]:
    """A LangChain ``Embeddings`` over the shared embedding, and a chat model that refuses."""
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    class _Local(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedding.embed_fn(texts)

        def embed_query(self, text: str) -> list[float]:
            return embedding.embed_fn([text])[0]

    class _NoLLM(FakeListChatModel):
        def _call(self, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("mem0 peer: an LLM call was attempted (infer=False forbids it)")

    return _Local(), _NoLLM(responses=["unused"])


class Mem0Peer:
    """Mem0 OSS memories; rollback emulated by inverting ``history`` events."""

    name = "mem0"
    native_rollback = False
    native_search = True

    def __init__(self, workdir: str | Path, embedding: Any) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        mem0 = _import_mem0(self.workdir / "mem0_home")
        embedder, llm = _langchain_parts(embedding)
        self.memory = mem0.Memory.from_config(
            {
                "embedder": {
                    "provider": "langchain",
                    "config": {"model": embedder, "embedding_dims": embedding.dims},
                },
                "llm": {"provider": "langchain", "config": {"model": llm}},
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "path": str(self.workdir / "qdrant"),
                        "on_disk": True,
                        "embedding_model_dims": embedding.dims,
                        "collection_name": "chronobench",
                    },
                },
                "history_db_path": str(self.workdir / "history.db"),
            }
        )
        self.notes = Bookkeeping(self.workdir)
        # memory id -> (item id, version, timestamp); version -> wall-clock mark.
        self.notes.data.setdefault("origin", {})
        self.notes.data.setdefault("marks", {"0": _now()})

    # -- writes --------------------------------------------------------------------
    def _add_one(self, item_id: str, text: str, version: int, timestamp: str | None) -> str:
        out = self.memory.add(
            [{"role": "user", "content": text}],
            user_id=USER,
            metadata={ITEM_KEY: item_id, VERSION_KEY: version, "timestamp": timestamp},
            infer=False,
        )
        memory_id = out["results"][0]["id"]
        self.notes.data["origin"][memory_id] = [item_id, version, timestamp]
        return memory_id

    def add(self, write: PeerWrite) -> None:
        for item_id, text in write.items:
            self._add_one(item_id, text, write.version, write.timestamp)
        self.notes.data["marks"][str(write.version)] = _now()
        self.notes.save()

    # -- reads ---------------------------------------------------------------------
    @staticmethod
    def _memory(row: dict[str, Any], score: float = 0.0) -> Memory:
        meta = row.get("metadata") or {}
        version = meta.get(VERSION_KEY)
        version = int(version) if version else None
        return Memory(meta.get(ITEM_KEY), row["memory"], version, score, row.get("id"))

    def state(self) -> list[Memory]:
        rows = self.memory.get_all(filters={"user_id": USER}, top_k=_ALL)["results"]
        mems = [self._memory(r) for r in rows]
        return sorted(mems, key=lambda m: (m.version or 0, m.item_id or ""))

    def search(self, query: str, k: int) -> list[Memory]:
        rows = self.memory.search(query, filters={"user_id": USER}, top_k=k, threshold=0.0)
        return [self._memory(r, float(r.get("score") or 0.0)) for r in rows["results"]]

    def delete(self, memories: list[Memory]) -> None:
        """Mem0's own ``Memory.delete(memory_id)`` for each memory its search returned
        (the optional forget method of the peer interface, RQ4)."""
        for m in memories:
            if m.memory_id is not None and self.memory.vector_store.get(vector_id=m.memory_id):
                self.memory.delete(m.memory_id)

    def history_rows(self) -> int:
        """Rows in Mem0's history table (it only grows)."""
        return sum(len(self.memory.history(mid)) for mid in self.notes.data["origin"])

    # -- rollback (emulated) -----------------------------------------------------------
    def rollback_to(self, version: int) -> RollbackInfo:
        """Invert, newest first, the history events recorded after write ``version``."""
        mark = self.notes.data["marks"].get(str(version))
        if mark is None:
            raise KeyError(f"mem0: no mark for version {version} (never written)")
        before = self.history_rows()
        events = []
        for memory_id in list(self.notes.data["origin"]):
            for ev in self.memory.history(memory_id):
                if ev["updated_at"] > mark:
                    events.append(ev)
        events.sort(key=lambda ev: ev["updated_at"], reverse=True)
        reissued = 0
        counts = {"ADD": 0, "UPDATE": 0, "DELETE": 0}
        for ev in events:
            memory_id = ev["memory_id"]
            counts[ev["event"]] = counts.get(ev["event"], 0) + 1
            if ev["event"] == "ADD":
                if self.memory.vector_store.get(vector_id=memory_id) is not None:
                    self.memory.delete(memory_id)
            elif ev["event"] == "UPDATE":
                self.memory.update(memory_id, text=ev["old_memory"])
            elif ev["event"] == "DELETE":
                # Mem0 cannot undelete: the text comes back as a new memory with a new id.
                item_id, item_version, stamp = self.notes.data["origin"][memory_id]
                self._add_one(item_id, ev["old_memory"], item_version, stamp)
                reissued += 1
        self.notes.save()
        return RollbackInfo(
            False,
            "adapter inverts history(memory_id) events after the target's mark",
            {
                "inverted": counts,
                "reissued_ids": reissued,
                "history_rows": {"before": before, "after": self.history_rows()},
            },
        )

    def storage_bytes(self) -> int:
        return folder_bytes(self.workdir)

    def close(self) -> None:
        self.notes.save()
        self.memory.close()
        # Memory.close leaves local Qdrant's folder lock held; a reopen needs it released.
        client = getattr(self.memory.vector_store, "client", None)
        if client is not None:
            client.close()
