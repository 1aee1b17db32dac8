"""Loading the built benchmark for a run (building it first when needed)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronobench.data.schema import RollbackQuery, Stream
from chronobench.runner.provenance import config_hash, file_sha256


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

    def queries_by_stream(self) -> dict[str, list[RollbackQuery]]:
        """Queries grouped by stream id, in stream order."""
        groups: dict[str, list[RollbackQuery]] = {s.stream_id: [] for s in self.streams}
        for q in self.queries:
            groups.setdefault(q.stream_id, []).append(q)
        return groups


_REPO_ROOT = Path(__file__).resolve().parents[2]


def _resolve_source(source: str | None) -> str | None:
    # Config paths such as tests/fixtures/... are relative to the repository, wherever
    # the command runs from.
    if source is None or Path(source).is_absolute() or Path(source).exists():
        return source
    candidate = _REPO_ROOT / source
    return str(candidate) if candidate.exists() else source


def build_folder_key(dcfg: dict[str, Any]) -> str:
    """Builds with different sources or parameters live in different folders."""
    ident = {k: dcfg.get(k) for k in ("name", "source", "params", "paraphrase")}
    return config_hash(ident)[:8]


def load_run_data(dcfg: dict[str, Any], data_dir: str, paraphrase_backbone: Any = None) -> RunData:
    """Build (or reuse) the dataset described by the ``dataset`` config group and load it."""
    from chronobench.data.io import load_built
    from data_builders import build_dataset

    params = dict(dcfg.get("params") or {})
    folder = build_dataset(
        dcfg["name"],
        granularity=dcfg["granularity"] if dcfg["name"] == "locomo" else None,
        source=_resolve_source(dcfg.get("source")),
        out_dir=Path(data_dir) / build_folder_key(dcfg),
        paraphrase_backbone=paraphrase_backbone if dcfg.get("paraphrase") else None,
        **params,
    )
    built = load_built(folder)
    streams = list(built.streams)
    queries = list(built.queries)
    if dcfg.get("queries_file"):
        from chronobench.data.user_queries import load_user_queries

        # User-written requests replace the built ones and are scored the same way.
        queries = load_user_queries(Path(dcfg["queries_file"]), built)
    if dcfg.get("limit_streams"):
        keep = {s.stream_id for s in streams[: int(dcfg["limit_streams"])]}
        streams = [s for s in streams if s.stream_id in keep]
        queries = [q for q in queries if q.stream_id in keep]
    if dcfg.get("limit_queries"):
        per: dict[str, int] = {}
        limited = []
        for q in queries:
            per[q.stream_id] = per.get(q.stream_id, 0) + 1
            if per[q.stream_id] <= int(dcfg["limit_queries"]):
                limited.append(q)
        queries = limited
    manifest_path = Path(folder) / "manifest.json"
    return RunData(
        name=dcfg["name"],
        granularity=dcfg["granularity"],
        folder=Path(folder),
        streams=streams,
        queries=queries,
        manifest_sha256=file_sha256(manifest_path),
        manifest=dict(built.manifest),
    )
