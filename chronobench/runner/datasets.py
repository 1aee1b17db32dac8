"""Loading the built benchmark for a run (building it first when needed)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronobench.data.schema import RollbackQuery, Stream
from chronobench.errors import ConfigError
from chronobench.hashing import file_sha256
from chronobench.options import check_model_options, recorded_options
from chronobench.published_ids import legacy_json_key
from chronobench.spec import DatasetSpec


@dataclass
class RunData:
    """Streams and queries of one run, with where they came from."""

    name: str
    granularity: str
    folder: Path
    streams: list[Stream]
    queries: list[RollbackQuery]
    manifest_sha256: str
    manifest: dict[str, Any]
    queries_sha256: str | None = None  # sha256 of a user query file's bytes

    def queries_by_stream(self) -> dict[str, list[RollbackQuery]]:
        """Queries grouped by stream id, in stream order."""
        groups: dict[str, list[RollbackQuery]] = {s.stream_id: [] for s in self.streams}
        for q in self.queries:
            groups.setdefault(q.stream_id, []).append(q)
        return groups


def resolve_source(source: str | None) -> str | None:
    """Config paths such as ``tests/fixtures/...`` are relative to the repository (or the
    wheel's shipped copy), wherever the command runs from."""
    from chronobench.paths import resolve_shipped

    return resolve_shipped(source)


def build_folder_key(dspec: DatasetSpec) -> str:
    """Builds with different sources or parameters live in different folders."""
    ident = {
        "name": dspec.name,
        "source": dspec.source,
        "params": dict(dspec.params),
        "paraphrase": dspec.paraphrase,
    }
    return legacy_json_key(ident)


def checked_dataset(dataset: Any, dspec: DatasetSpec, *, where: str) -> DatasetSpec:
    """``dspec`` checked by its registered :class:`~data_builders.dataset.Dataset` (its
    params model, granularities and own check; a user query file's shape), with its params
    normalised: the given keys coerced by the params model, and the dataset's ``recorded``
    keys filled with their defaults when left out. A run's id and recorded spec hash the
    normalised params, so a config that leaves a default out and one that restates it
    are the same run. Raises :class:`ConfigError` naming the key and ``where``."""
    given = check_model_options(dataset.params, dspec.params, where=where, group="dataset.params")
    params = recorded_options(given, dataset.defaults(), dataset.recorded)
    dspec = dspec.model_copy(update={"params": params})
    if dataset.granularities and dspec.granularity not in dataset.granularities:
        raise ConfigError(
            f"config key 'dataset.granularity': {dspec.granularity!r} is not a {dspec.name} "
            f"granularity; choose {', '.join(dataset.granularities)} [{where}]"
        )
    if dataset.check is not None:
        dataset.check(dspec, where)
    if dspec.queries_file:
        qpath = Path(resolve_source(dspec.queries_file) or "")
        if not qpath.is_file():
            raise ConfigError(
                f"dataset.queries_file={dspec.queries_file!r}: file not found "
                f"(looked in {Path.cwd()} and the chronobench checkout); give a JSONL path"
            )
        from data_builders.user_query_file import read_query_lines

        # Shape only (no built data needed): an empty or malformed file fails at once.
        read_query_lines(qpath)
    return dspec


def validate_queries(dspec: DatasetSpec, *, data_dir: Path) -> None:
    """Check a user query file against the built dataset (built first when needed):
    sample ids, sessions, versions. The runner calls it for every cell of a suite before
    the first cell runs; a bad line raises UserQueryError (exit 2)."""
    if dspec.queries_file and not dspec.paraphrase:
        load_run_data(dspec, data_dir)


def ensure_built(dspec: DatasetSpec, data_dir: str | Path, paraphrase_backbone: Any = None) -> Path:
    """Build the dataset described by ``dspec`` unless it is built; returns its folder."""
    from chronobench.runner.dataset_registry import DATASETS
    from data_builders import build_dataset
    from data_builders.errors import DatasetError

    try:
        folder = build_dataset(
            DATASETS.entry(dspec.name).load(),
            granularity=dspec.granularity,
            source=resolve_source(dspec.source),
            out_dir=Path(data_dir) / build_folder_key(dspec),
            paraphrase_backbone=paraphrase_backbone if dspec.paraphrase else None,
            **dict(dspec.params),
        )
    except DatasetError as exc:
        raise advice_for_run(exc) from exc
    return Path(folder)


# The builders' advice names `chronobench build`'s flag; `run` rejects flags and takes the
# same setting as a config key.
_BUILD_SOURCE_FLAG = re.compile(r"--source(?: PATH)?")


def advice_for_run(exc: Exception) -> Exception:
    """``exc`` (a builder's error) with its ``--source PATH`` advice given as ``run``
    takes it, ``dataset.source=PATH``; unchanged when it gives none."""
    text = str(exc)
    if not _BUILD_SOURCE_FLAG.search(text):
        return exc
    return type(exc)(_BUILD_SOURCE_FLAG.sub("dataset.source=PATH", text))


# What this process loaded from built folders, keyed by the files' signatures: the
# runner asks for the same dataset once per cell (and once more to check a query file),
# and parsing a LoCoMo build costs about a second each time. The loaded models are
# shared between callers, who only read them (each gets its own lists).
_LOADED: dict[tuple[Any, ...], Any] = {}
_LOADED_MAX = 16


def _memo(key: tuple[Any, ...], load: Any) -> Any:
    """``load()``, or what it returned for ``key`` before in this process."""
    if key not in _LOADED:
        if len(_LOADED) >= _LOADED_MAX:
            _LOADED.pop(next(iter(_LOADED)))  # oldest first
        _LOADED[key] = load()
    return _LOADED[key]


def _signature(folder: Path) -> tuple[Any, ...]:
    """The folder and its files' (name, size, mtime_ns): a rebuilt or edited file
    changes it, so a stale load is never reused."""
    out: list[Any] = [str(folder.resolve())]
    for child in sorted(folder.iterdir()) if folder.is_dir() else ():
        if child.is_file():
            st = child.stat()
            out.append((child.name, st.st_size, st.st_mtime_ns))
    return tuple(out)


def load_run_data(
    dspec: DatasetSpec, data_dir: str | Path, paraphrase_backbone: Any = None
) -> RunData:
    """Build (or reuse) the dataset described by ``dspec`` and load it."""
    from chronobench.data.io import load_built

    folder = ensure_built(dspec, data_dir, paraphrase_backbone)
    signature = _signature(Path(folder))
    built = _memo(("built", signature), lambda: load_built(folder))
    streams = list(built.streams)
    queries = list(built.queries)
    queries_sha256 = None
    if dspec.queries_file:
        from data_builders.user_query_file import load_user_queries

        qpath = Path(resolve_source(dspec.queries_file) or dspec.queries_file)
        queries_sha256 = file_sha256(qpath) if qpath.is_file() else None
        # User-written requests replace the built ones and are scored the same way.
        key = ("queries", signature, qpath.resolve(), queries_sha256, dspec.turn_gold)
        hit = _memo(key, lambda: load_user_queries(qpath, built, turn_gold=dspec.turn_gold))
        queries = list(hit)
    if dspec.limit_streams:
        keep = {s.stream_id for s in streams[: int(dspec.limit_streams)]}
        streams = [s for s in streams if s.stream_id in keep]
        queries = [q for q in queries if q.stream_id in keep]
    if dspec.limit_queries:
        per: dict[str, int] = {}
        limited = []
        for q in queries:
            per[q.stream_id] = per.get(q.stream_id, 0) + 1
            if per[q.stream_id] <= int(dspec.limit_queries):
                limited.append(q)
        queries = limited
    if dspec.subset is not None:
        streams, queries = take_subset(streams, queries, dspec.subset)
    manifest_path = Path(folder) / "manifest.json"
    return RunData(
        name=dspec.name,
        granularity=dspec.granularity,
        folder=Path(folder).resolve(),
        streams=streams,
        queries=queries,
        manifest_sha256=file_sha256(manifest_path),
        manifest=dict(built.manifest),
        queries_sha256=queries_sha256,
    )


def take_subset(streams: list[Any], queries: list[Any], subset: Any) -> tuple[list[Any], list[Any]]:
    """The stated subset (:class:`chronobench.spec.SubsetSpec`): the first streams, the
    first queries of each, and each stream's ``final_qa`` probes cut to the battery items
    the kept queries score, carried by the stream's first kept query."""
    if subset.streams:
        keep = {s.stream_id for s in streams[: int(subset.streams)]}
        streams = [s for s in streams if s.stream_id in keep]
        queries = [q for q in queries if q.stream_id in keep]
    finals: dict[str, list[Any]] = {}
    per: dict[str, list[Any]] = {}
    for q in queries:
        finals.setdefault(q.stream_id, []).extend(p for p in q.probes if p.kind == "final_qa")
        if len(per.setdefault(q.stream_id, [])) < int(subset.queries_per_stream):
            per[q.stream_id].append(q)
    out = []
    for sid, kept in per.items():
        scored = {
            str(p.meta.get("qa_id"))
            for q in kept
            for p in q.probes
            if p.kind in ("qa", "future_qa") and p.meta.get("qa_id") is not None
        }
        cut = [p for p in finals.get(sid, []) if str(p.meta.get("qa_id")) in scored]
        for i, q in enumerate(kept):
            # Copies: the loaded dataset is shared in this process (runner/datasets memo).
            probes = [p for p in q.probes if p.kind != "final_qa"] + (cut if i == 0 else [])
            out.append(q.model_copy(update={"probes": probes}))
    return streams, out
