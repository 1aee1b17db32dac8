"""ChronoMem under the peer interface, so it is a row of the same restore-fidelity table.

Native: every write is one ``commit`` (its items as ``add`` ops, the timestamp as
``valid_time``), search is ChronoMem's hybrid item search at HEAD, rollback is
``rollback_to_version`` (``truncate`` by default: later versions are hidden and
``compact`` can delete them; ``revert`` appends a copy of the target).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chronobench.systems.peers.base import (
    Bookkeeping,
    Memory,
    PeerWrite,
    RollbackInfo,
    folder_bytes,
)

APP = "chronobench"
USER = "peer"


class ChronoMemPeer:
    """ChronoMem's store as a peer (file-backed, one scope)."""

    name = "chronomem"
    native_rollback = True
    native_search = True

    def __init__(self, workdir: str | Path, embedding: Any, *, mode: str = "truncate") -> None:
        from chronomem import ChronoMem

        if mode not in ("truncate", "revert"):
            raise ValueError(f"chronomem peer: mode={mode!r}; use 'truncate' or 'revert'")
        self.mode = mode
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.store = ChronoMem(self.workdir / "chronomem.sqlite", embedder=embedding.embedder)
        self.notes = Bookkeeping(self.workdir)
        # stream version -> store version id; item id -> the version that wrote it.
        self.notes.data.setdefault("vid", {})
        self.notes.data.setdefault("item_version", {})

    def add(self, write: PeerWrite) -> None:
        ops = [{"op": "add", "item_id": item_id, "text": text} for item_id, text in write.items]
        vid = self.store.commit(
            APP,
            USER,
            ops,
            source="chronobench",
            reason=write.write_id,
            valid_time=write.timestamp,
        )
        if not self.notes.data["vid"]:
            self.notes.data["vid"]["0"] = self.store.versions(APP, USER)[0].version_id
        self.notes.data["vid"][str(write.version)] = vid
        for item_id, _ in write.items:
            self.notes.data["item_version"][item_id] = write.version
        self.notes.save()

    def _version(self, item_id: str) -> int | None:
        return self.notes.data["item_version"].get(item_id)

    def state(self) -> list[Memory]:
        snap = self.store.snapshot(APP, USER)
        return [Memory(item, text, self._version(item)) for item, text in snap.items()]

    def search(self, query: str, k: int) -> list[Memory]:
        hits = self.store.search(APP, USER, query, k=k)
        return [Memory(h.item_id, h.text, self._version(h.item_id), h.score) for h in hits]

    def rollback_to(self, version: int) -> RollbackInfo:
        vid = self.notes.data["vid"][str(version)]
        self.store.rollback_to_version(APP, USER, vid, mode=self.mode)
        return RollbackInfo(True, f"rollback_to_version (mode={self.mode})")

    def storage_bytes(self) -> int:
        return folder_bytes(self.workdir)

    def close(self) -> None:
        self.store.close()
