"""The append-only sample log (``samples.jsonl``) of a run folder.

Whole files (manifest, metrics, leaderboard) are written with
:func:`chronobench.fileio.atomic_write_json` / :func:`~chronobench.fileio.atomic_write_text`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class SampleLog:
    """Append-only ``samples.jsonl`` that tolerates a torn last line from a crash."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
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
                    from chronobench.errors import ResultsError

                    raise ResultsError(
                        f"{self.path}:{lineno}: not valid JSON ({exc.msg}); delete the line "
                        "or rerun the cell with overwrite=true"
                    ) from None
        return rows

    def done_ids(self) -> set[str]:
        """Ids of samples already written (for resuming)."""
        return {row["sample_id"] for row in self.read()}

    def append(self, rows: Iterable[dict[str, Any]]) -> int:
        """Append rows and fsync; returns how many were written."""
        # Not canonical_json: published samples' sha256 pin these bytes (ASCII escapes,
        # default separators).
        lines = [json.dumps(r, sort_keys=True, default=str) + "\n" for r in rows]
        if not lines:
            return 0
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write("".join(lines))
            fh.flush()
            os.fsync(fh.fileno())
        return len(lines)
