"""JSONL/JSON I/O for built datasets, and loading a built folder back.

Files are written atomically (:func:`chronobench.fileio.atomic_write_text`: temp file,
fsync, rename) so a crash never leaves a half-written file; records are canonical JSON
(:func:`chronobench.hashing.canonical_json`, one per line, ``\\n`` endings) so equal
inputs give byte-identical files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from chronobench.data.schema import RollbackQuery, Stream
from chronobench.fileio import atomic_write_json, atomic_write_text
from chronobench.hashing import canonical_json

M = TypeVar("M", bound=BaseModel)

STREAMS_FILE = "streams.jsonl"
QUERIES_FILE = "queries.jsonl"
POOLS_FILE = "pools.jsonl"
MANIFEST_FILE = "manifest.json"


def _plain(obj: Any) -> Any:
    return obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj


def write_jsonl(path: str | os.PathLike[str], records: Iterable[Any]) -> Path:
    """Write one canonical JSON record (a model or plain object) per line, atomically."""
    return atomic_write_text(path, "".join(canonical_json(_plain(r)) + "\n" for r in records))


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write an indented, key-sorted JSON document (a model or plain object) atomically."""
    return atomic_write_json(path, _plain(obj))


def read_jsonl(path: str | os.PathLike[str], model: type[M]) -> list[M]:
    """Read a JSONL file into models; errors name the file, line and field."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: file not found")
    out: list[M] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                out.append(model.model_validate_json(line))
            except ValidationError as exc:
                err = exc.errors()[0]
                loc = ".".join(str(p) for p in err["loc"]) or "(record)"
                raise ValueError(f"{path}: line {lineno}: field {loc!r}: {err['msg']}") from exc
    return out


def read_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a JSON object (e.g. a manifest)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{path}: file not found") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


@dataclass
class BuiltDataset:
    """A built folder loaded back: streams, queries, manifest and (optional) probe pools.

    ``pools`` maps stream_id to the raw probe-pool record used to attach probes to
    user-supplied queries (see :mod:`data_builders.user_query_file`).
    """

    streams: list[Stream]
    queries: list[RollbackQuery]
    manifest: dict[str, Any]
    pools: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: Path | None = None

    def stream(self, stream_id: str) -> Stream:
        """The stream with this id (KeyError naming the id when absent)."""
        for s in self.streams:
            if s.stream_id == stream_id:
                return s
        raise KeyError(f"no stream {stream_id!r} in {self.path}")


def load_built(directory: str | os.PathLike[str]) -> BuiltDataset:
    """Load ``streams.jsonl``, ``queries.jsonl``, ``manifest.json`` (and ``pools.jsonl``
    when present) from a built folder."""
    d = Path(directory)
    if not d.is_dir():
        raise FileNotFoundError(f"{d}: built dataset folder not found; run `chronobench build`")
    pools: dict[str, dict[str, Any]] = {}
    if (d / POOLS_FILE).is_file():
        for line in (d / POOLS_FILE).read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                pools[rec["stream_id"]] = rec
    return BuiltDataset(
        streams=read_jsonl(d / STREAMS_FILE, Stream),
        queries=read_jsonl(d / QUERIES_FILE, RollbackQuery),
        manifest=read_json(d / MANIFEST_FILE),
        pools=pools,
        path=d,
    )
