"""Turning ADK events and memory entries into ChronoMem ops (and back)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from chronomem.adk.ledger import LedgerRow

# add_events_to_memory(custom_metadata=...) keys this service reads; others are ignored,
# as ADK asks of services that do not support a key (they are service-specific).
METADATA_KEYS = ("labels", "summary", "reason")
# Session-state key whose mapping is merged into the commit labels of add_session_to_memory.
SESSION_LABELS_KEY = "chronomem_labels"


@dataclass(frozen=True)
class Candidate:
    """One memory to write: its id, text and metadata."""

    memory_id: str
    text: str
    row: LedgerRow
    time: float | None = None


def content_text(content: Any) -> str:
    """The text parts of a ``types.Content`` joined by newlines (thoughts skipped)."""
    parts = getattr(content, "parts", None) or []
    texts = [
        p.text.strip()
        for p in parts
        if getattr(p, "text", None) and not getattr(p, "thought", False) and p.text.strip()
    ]
    return "\n".join(texts)


def iso_time(ts: float | None) -> str | None:
    """``ts`` (seconds since the epoch) as ISO 8601 in UTC."""
    if ts is None:
        return None
    return datetime.fromtimestamp(float(ts), tz=timezone.utc).isoformat()


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def event_candidate(event: Any, session_id: str | None) -> Candidate | None:
    """The memory an ADK ``Event`` contributes, or None when it carries no text."""
    content = getattr(event, "content", None)
    text = content_text(content) if content is not None else ""
    if not text:
        return None
    author = getattr(event, "author", None) or None
    ts = getattr(event, "timestamp", None)
    # Events without an id get a stable one, so re-adding them is still idempotent.
    memory_id = getattr(event, "id", None) or _digest(
        str(author), repr(ts), content.model_dump_json(exclude_none=True)
    )
    row = LedgerRow(
        memory_id=str(memory_id),
        session_id=session_id,
        author=author,
        timestamp=iso_time(ts),
        role=getattr(content, "role", None),
        custom_metadata={},
    )
    return Candidate(str(memory_id), text, row, None if ts is None else float(ts))


def entry_candidate(entry: Any, index: int) -> Candidate | None:
    """The memory a ``MemoryEntry`` describes, or None when its content has no text."""
    content = getattr(entry, "content", None)
    if content is None or not hasattr(content, "parts"):
        raise TypeError(f"memories[{index}] must be a MemoryEntry with a types.Content content")
    text = content_text(content)
    if not text:
        return None
    memory_id = entry.id or _digest(str(entry.author), str(entry.timestamp), text)
    meta = dict(entry.custom_metadata or {})
    try:
        json.dumps(meta)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"memories[{index}].custom_metadata must be JSON-serialisable") from exc
    row = LedgerRow(
        memory_id=str(memory_id),
        session_id=None,
        author=entry.author,
        timestamp=entry.timestamp,
        role=getattr(content, "role", None),
        custom_metadata=meta,
    )
    return Candidate(str(memory_id), text, row)


def read_metadata(custom_metadata: Mapping[str, object] | None) -> dict[str, Any]:
    """The keys of ``custom_metadata`` this service supports, validated."""
    if custom_metadata is None:
        return {}
    if not isinstance(custom_metadata, Mapping):
        raise TypeError("custom_metadata must be a mapping or None")
    out: dict[str, Any] = {}
    labels = custom_metadata.get("labels")
    if labels is not None:
        if not isinstance(labels, Mapping):
            raise ValueError("custom_metadata['labels'] must be a mapping of commit labels")
        out["labels"] = dict(labels)
    for key in ("summary", "reason"):
        value = custom_metadata.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise ValueError(f"custom_metadata[{key!r}] must be a string")
            out[key] = value
    return out


def short(text: str, limit: int = 160) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
