"""The append-only sample log (``samples.jsonl``) of a run folder.

Whole files (manifest, metrics, leaderboard) are written with
:func:`chronobench.fileio.atomic_write_json` / :func:`~chronobench.fileio.atomic_write_text`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from chronobench.results.records import SampleRecord, dump_row, explain, parse_record


class SampleLog:
    """Append-only ``samples.jsonl`` of typed records
    (:mod:`chronobench.results.records`) that tolerates a torn last line from a crash."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()
        # The rows of typed records this log appended, while the file holds exactly them
        # (it started empty and grew by what we wrote): read_checked() returns them
        # instead of parsing and validating the file again.
        self._size = self.path.stat().st_size if self.path.exists() else 0
        self._kept: list[dict[str, Any]] | None = [] if self._size == 0 else None

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
        """All complete rows as plain JSON objects, in file order."""
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

    def read_records(self) -> list[SampleRecord]:
        """All complete rows as typed records, in file order; a row that does not fit its
        record type is a :class:`~chronobench.errors.ResultsError` naming file and line."""
        return [record for _, record in self._checked()]

    def read_checked(self) -> list[dict[str, Any]]:
        """All complete rows as plain objects, each checked against its record type as
        :meth:`read_records` does: for readers that want rows, not records (metrics).
        When every line of the file was appended here from typed records, those rows
        are returned as they were dumped (tuples where the file has lists)."""
        size = self.path.stat().st_size if self.path.exists() else 0
        if self._kept is not None and size == self._size:
            return list(self._kept)
        return [row for row, _ in self._checked()]

    def _checked(self) -> list[tuple[dict[str, Any], SampleRecord]]:
        from pydantic import ValidationError

        from chronobench.errors import ResultsError

        out = []
        for lineno, row in enumerate(self.read(), start=1):
            try:
                out.append((row, parse_record(row)))
            except ValidationError as exc:
                raise ResultsError(
                    f"{self.path}: sample {lineno} ({row.get('sample_id')!r}): {explain(exc)}; "
                    "rerun the cell with overwrite=true"
                ) from None
        return out

    def done_ids(self) -> set[str]:
        """Ids of samples already written (for resuming)."""
        return {row["sample_id"] for row in self.read()}

    def append(self, records: Iterable[SampleRecord | Mapping[str, Any]]) -> int:
        """Append records (or plain rows) and fsync; returns how many were written."""
        typed, rows = True, []
        for r in records:
            typed = typed and isinstance(r, SampleRecord)
            rows.append(r.to_row() if isinstance(r, SampleRecord) else dict(r))
        if not rows:
            return 0
        data = "".join(dump_row(row) for row in rows)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        self._size += len(data.encode("utf-8"))
        if self._kept is not None:
            # Plain rows were never validated: from now on the file is read back.
            if typed:
                self._kept.extend(rows)
            else:
                self._kept = None
        return len(rows)
