"""What a run's per-query file (:mod:`chronobench.results.per_query`) needs from its
dataset: each version's session number, date and a summary; written when a cell ends."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chronobench.data.io import POOLS_FILE
from chronobench.results.per_query import write_query_file

#: Characters of a write's own text kept when a version is one turn, not a session.
_TURN_CHARS = 160


def _pools(folder: Path) -> dict[str, dict[str, Any]]:
    path = Path(folder) / POOLS_FILE
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            out[str(rec["stream_id"])] = rec
    return out


def _write_text(write: Any) -> str:
    return " ".join(op.text or "" for op in write.ops if op.text).strip()


def version_table(data: Any) -> dict[str, dict[int, dict[str, Any]]]:
    """Per stream, per version (0: the empty memory): ``session``, ``date`` and
    ``summary`` (the session's annotated events when the build has them, else the write's
    commit summary or text); a turn-level version adds ``turn``, its own text."""
    pools = _pools(data.folder)
    by_turn = str(getattr(data, "granularity", "session")) != "session"
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for stream in data.streams:
        events = {
            int(s["session"]): " ".join(s.get("events") or [])
            for s in (pools.get(stream.stream_id, {}).get("sessions") or [])
        }
        table: dict[int, dict[str, Any]] = {
            0: {"session": None, "date": None, "summary": "(the empty memory: no write yet)"}
        }
        for w in stream.writes:
            labels = w.labels or {}
            session = labels.get("session")
            text = _write_text(w)
            summary = events.get(int(session)) if isinstance(session, int) else None
            entry: dict[str, Any] = {
                "session": session,
                "date": labels.get("session_date") or w.valid_time,
                "summary": summary or w.summary or text,
            }
            if by_turn and text:
                entry["turn"] = text[:_TURN_CHARS]
            table[w.version] = entry
        out[stream.stream_id] = table
    return out


def write_cell_queries(
    run_dir: Path,
    run_id: str,
    cell: Mapping[str, Any],
    data: Any,
    records: Sequence[Any],
    known: Mapping[str, Sequence[str]] | None,
) -> Path | None:
    """Write the cell's ``queries.jsonl.gz`` from its sample records (typed records or
    rows) and its dataset."""
    rows = [r.to_row() if hasattr(r, "to_row") else r for r in records]
    return write_query_file(run_dir, run_id, cell, rows, version_table(data), known)
