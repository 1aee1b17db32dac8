"""The small interface every peer memory system is wrapped in, and what it returns.

A peer receives what a deployed agent's memory would: each write of the stream (its id,
its version on the timeline, its timestamp and the texts it adds), search queries, and a
rollback to a version. It never sees a query's gold. The restore-fidelity measurement
(:mod:`chronobench.metrics.fidelity`) and the own-targeting step (:func:`own_target`)
only use this interface, so ChronoMem and every peer are measured by the same code.

Peers keep everything they write under one work folder, so a measurement can copy a
post-exposure folder and reopen it per rollback (a restart, not a rollback).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from chronobench.data.schema import Stream

# The checkpoint/metadata key under which peers tag what they store with the write's version.
VERSION_KEY = "chronobench_version"
ITEM_KEY = "chronobench_item"
# Adapter bookkeeping a deployed adapter would keep too (ids it was handed back, turn
# numbers, wall-clock marks); one JSON file in the work folder so a reopen finds it.
BOOKKEEPING_FILE = "adapter.json"


@dataclass(frozen=True)
class PeerWrite:
    """One write of the stream as a peer receives it: one memory per item text."""

    write_id: str
    version: int
    timestamp: str | None
    items: tuple[tuple[str, str], ...]  # (item id, text), in write order

    @property
    def text(self) -> str:
        """The write as one text (peers that store a write as one message)."""
        return "\n".join(text for _, text in self.items)


@dataclass(frozen=True)
class Memory:
    """A memory a peer holds or returns: the item, its text, and the version that wrote it
    (as the peer recorded it; ``None`` when the peer lost the tag)."""

    item_id: str | None
    text: str
    version: int | None
    score: float = 0.0
    memory_id: str | None = None  # the peer's own id for it, where it has one (Mem0)


@dataclass
class RollbackInfo:
    """How a peer rolled back. ``native`` is True only when the peer's own API restores
    the version; an adapter's emulation is always ``native=False``."""

    native: bool
    method: str
    detail: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PeerMemory(Protocol):
    """A memory system under the peer interface (see the module docstring)."""

    name: str
    native_rollback: bool  # the peer's own API restores a version
    native_search: bool  # search() is the peer's own retrieval (else the adapter's)

    def add(self, write: PeerWrite) -> None: ...

    def search(self, query: str, k: int) -> list[Memory]: ...

    def rollback_to(self, version: int) -> RollbackInfo: ...

    def state(self) -> list[Memory]: ...

    def storage_bytes(self) -> int: ...

    def close(self) -> None: ...

    # Optional (RQ4, selective forgetting): ``delete(memories)`` removes the given memories
    # (as returned by ``search``) through the peer's own API. A peer without it shows "not
    # supported" in the RQ4 table; plug-in peers need not have it.


def peer_writes(stream: Stream | Sequence[Any]) -> list[PeerWrite]:
    """A stream's writes as peers receive them (add-only: a write adds its texts).

    ``stream``: a :class:`Stream` (the benches) or its public writes
    (:class:`chronobench.protocols.StreamWrite`, what the sealed protocol hands a
    system at ingest). Streams with updates or deletes are rejected: the peers' add
    paths are what is compared.
    """
    if not isinstance(stream, Stream):
        return [_from_public(w) for w in stream]
    out = []
    for w in stream.writes:
        items = []
        for k, op in enumerate(w.ops):
            if op.op != "add" or not op.text:
                raise ValueError(
                    f"peer systems take add-only streams; stream {stream.stream_id} write "
                    f"{w.version} op {k} is {op.op!r} (use a LoCoMo stream)"
                )
            items.append((op.item_id, op.text))
        stamp = w.valid_time or w.labels.get("session_date")
        out.append(
            PeerWrite(
                write_id=f"{stream.stream_id}#{w.version}",
                version=w.version,
                timestamp=str(stamp) if stamp is not None else None,
                items=tuple(items),
            )
        )
    return out


def folder_bytes(folder: str | os.PathLike[str]) -> int:
    """Bytes of every file under ``folder`` (what the peer left on disk)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, name))
    return total


def folder_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Every file under ``folder`` except the adapter's bookkeeping file."""
    out = []
    for root, _, files in os.walk(folder):
        for name in files:
            if name != BOOKKEEPING_FILE:
                out.append(Path(root) / name)
    return sorted(out)


class Bookkeeping:
    """The adapter's own JSON notes in the work folder (written atomically on save)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / BOOKKEEPING_FILE
        self.data: dict[str, Any] = {}
        if self.path.is_file():
            self.data = json.loads(self.path.read_text(encoding="utf-8"))

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)


class DenseIndex:
    """The adapter's own search for peers without one: cosine top-k over the embeddings of
    the memories given (the same embedding every peer uses, so rows compare)."""

    def __init__(self, embedding: Any) -> None:
        self.embedding = embedding

    def top_k(self, query: str, memories: Sequence[Memory], k: int) -> list[Memory]:
        if not memories or k <= 0:
            return []
        mat = self.embedding.encode([m.text for m in memories])
        q = self.embedding.encode([query])[0]
        from chronomem.embedders import similarities

        scores = similarities(mat, q)  # float64: exact for grid vectors
        # Ties broken by position (write order), never by batch composition.
        order = sorted(range(len(memories)), key=lambda i: (-round(float(scores[i]), 6), i))
        return [
            Memory(memories[i].item_id, memories[i].text, memories[i].version, float(scores[i]))
            for i in order[:k]
        ]


def _from_public(w: Any) -> PeerWrite:
    items = []
    for k, c in enumerate(w.changes):
        if c.op != "add" or not c.text:
            raise ValueError(
                f"peer systems take add-only streams; write {w.write_id} change {k} is "
                f"{c.op!r} (use a LoCoMo stream)"
            )
        items.append((c.item_id, c.text))
    stamp = w.timestamp or w.labels.get("session_date")
    return PeerWrite(
        write_id=f"write#{w.write_id}",
        version=w.write_id,
        timestamp=str(stamp) if stamp is not None else None,
        items=tuple(items),
    )
