"""The on-disk layout of a run: ``results/runs/<run-id>/``.

- ``config.yaml``: the resolved config;
- ``manifest.json``: provenance (git, dataset manifest sha256, library versions, seed,
  timings, backbone call and token counts) and the results schema version;
- ``samples.jsonl``: one line per scored unit (a selector's ranking of one query, or one
  probe answered by the system), appended and fsynced as work finishes so a killed run
  resumes;
- ``metrics.json``: aggregates (n, mean, 95% bootstrap CI), rewritten atomically.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

RESULTS_SCHEMA_VERSION = "1.0"


def query_fields(query: Any) -> dict[str, Any]:
    """The fields every sample row repeats about its rollback query (a RollbackQuery)."""
    return {
        "query_id": query.query_id,
        "stream_id": query.stream_id,
        "intent": query.intent,
        "source": query.source,
        "request": query.text,
        "gold_version": query.target_version,
    }


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file in the same folder, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    """JSON with sorted keys and a trailing newline, written atomically."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


class SampleLog:
    """Append-only ``samples.jsonl`` that tolerates a torn last line from a crash."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()

    def _drop_torn_tail(self) -> None:
        # A SIGKILL mid-write can leave a partial last line; cut it so resuming is clean.
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as fh:
                fh.truncate(cut)

    def read(self) -> list[dict[str, Any]]:
        """All complete rows, in file order."""
        if not self.path.exists():
            return []
        rows = []
        with open(self.path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(
                        f"{self.path}:{lineno}: not valid JSON ({exc.msg}); delete the line "
                        "or rerun the cell with overwrite=true"
                    ) from exc
        return rows

    def done_ids(self) -> set[str]:
        """Ids of samples already written (for resuming)."""
        return {row["sample_id"] for row in self.read()}

    def append(self, rows: Iterable[dict[str, Any]]) -> int:
        """Append rows and fsync; returns how many were written."""
        lines = [json.dumps(r, sort_keys=True, default=str) + "\n" for r in rows]
        if not lines:
            return 0
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write("".join(lines))
            fh.flush()
            os.fsync(fh.fileno())
        return len(lines)
