"""Load MemoryAgentBench rows from the hub (lazily, via ``datasets``) or a local file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chronobench.hashing import file_sha256, sha256_json
from data_builders.errors import DatasetError, where

HUB_NAME = "ai-hyz/MemoryAgentBench"
# A pinned commit of the hub dataset (the July 2025 schema with qa_pair_ids and keypoints;
# docs/mab-schema.md). Never a branch name: a moving branch would change the data silently.
DEFAULT_REVISION = "62a64e5da0d95cd447e6da0c19ebce4efbd80a74"
SPLITS = (
    "Accurate_Retrieval",
    "Conflict_Resolution",
    "Long_Range_Understanding",
    "Test_Time_Learning",
)
UNSUPPORTED = {
    "Test_Time_Learning": (
        "Test_Time_Learning is not supported: its rows are in-context classification "
        "demonstrations and recommendation dialogues with no state to roll back to, so no "
        "rollback target or counterfactual probe can be defined. Use Accurate_Retrieval, "
        "Conflict_Resolution or Long_Range_Understanding."
    )
}


def _read_local(path: Path) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq  # lazy: only needed for Parquet sources

        return pq.read_table(path).to_pylist()
    text = path.read_text(encoding="utf-8")
    if suffix == ".jsonl":
        rows = []
        for i, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"{path}: line {i}: not valid JSON ({exc})") from exc
        return rows
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}: not valid JSON ({exc})") from exc
        if not isinstance(data, list):
            raise DatasetError(f"{path}: expected a JSON list of rows")
        return data
    raise DatasetError(f"{path}: unknown file type {suffix!r}; use .parquet, .jsonl or .json")


def validate_rows(rows: list[Any], origin: str) -> list[dict[str, Any]]:
    """Check the MemoryAgentBench row schema; errors name the origin, the row and the field."""
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DatasetError(f"{where(origin, f'row {i}')}: expected an object")
        if not isinstance(row.get("context"), str):
            raise DatasetError(f"{where(origin, f'row {i}', 'context')}: expected a string")
        qs, ans = row.get("questions"), row.get("answers")
        if not isinstance(qs, list) or not all(isinstance(q, str) for q in qs):
            raise DatasetError(f"{where(origin, f'row {i}', 'questions')}: expected list[str]")
        if not isinstance(ans, list) or not all(
            isinstance(a, list) and all(isinstance(x, str) for x in a) for a in ans
        ):
            raise DatasetError(
                f"{where(origin, f'row {i}', 'answers')}: expected list[list[str]] "
                "(one list of acceptable answers per question)"
            )
        if len(qs) != len(ans):
            raise DatasetError(
                f"{where(origin, f'row {i}', 'answers')}: {len(ans)} answer lists for "
                f"{len(qs)} questions; they must align by position"
            )
        meta = row.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("source"), str):
            raise DatasetError(f"{where(origin, f'row {i}', 'metadata.source')}: expected a string")
    return rows


def load_mab_rows(
    split: str, source: str | Path | None = None, revision: str = DEFAULT_REVISION
) -> tuple[list[dict[str, Any]], str, str]:
    """Return ``(rows, source name, sha256)``. ``source`` is a local .parquet/.jsonl/.json
    file, or None / "hub" to load ``ai-hyz/MemoryAgentBench`` through ``datasets``."""
    if split in UNSUPPORTED:
        raise DatasetError(UNSUPPORTED[split])
    if split not in SPLITS:
        raise DatasetError(f"unknown MemoryAgentBench split {split!r}; choose from {SPLITS}")
    if source is None or str(source) in ("hub", f"hf://{HUB_NAME}", HUB_NAME):
        try:
            import datasets  # lazy: heavy, and only needed on users' machines
        except ImportError as exc:
            raise DatasetError("loading from the hub needs the `datasets` package") from exc
        try:
            ds = datasets.load_dataset(HUB_NAME, split=split, revision=revision)
        except Exception as exc:  # network, auth, missing revision: report with the fix
            raise DatasetError(
                f"could not load {HUB_NAME} split {split} at revision {revision} ({exc}); "
                "pass --source with a local Parquet/JSONL copy"
            ) from exc
        rows = [dict(r) for r in ds]
        origin = f"{HUB_NAME}@{revision}:{split}"
        return validate_rows(rows, origin), origin, sha256_json(rows)
    path = Path(source).expanduser()
    if not path.is_file():
        raise DatasetError(f"{path}: MemoryAgentBench source file not found")
    return validate_rows(_read_local(path), str(path)), path.name, file_sha256(path)
