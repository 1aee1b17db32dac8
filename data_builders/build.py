"""``build_dataset``: build (or reuse) one dataset folder and write it atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chronobench.data.io import (
    MANIFEST_FILE,
    POOLS_FILE,
    QUERIES_FILE,
    STREAMS_FILE,
    write_json,
    write_jsonl,
)
from chronobench.protocols import Backbone
from data_builders.dataset import Dataset
from data_builders.errors import DatasetError
from data_builders.manifest import make_manifest, reusable
from data_builders.result import BuildResult
from data_builders.stats import compute_counts


def default_out_dir() -> Path:
    """``data/built`` under the repository root (found by walking up to pyproject.toml),
    else under the current directory."""
    for d in (Path(__file__).resolve().parent, *Path(__file__).resolve().parents):
        if (d / "pyproject.toml").is_file():
            return d / "data" / "built"
    return Path.cwd() / "data" / "built"


def _write(folder: Path, res: BuildResult, manifest: dict[str, Any]) -> None:
    write_jsonl(folder / STREAMS_FILE, res.streams)
    write_jsonl(folder / QUERIES_FILE, res.queries)
    write_jsonl(folder / POOLS_FILE, res.pools)
    write_json(folder / MANIFEST_FILE, manifest)  # last: its presence marks a complete build


def build_dataset(
    dataset: Dataset,
    *,
    granularity: str | None = None,
    source: str | Path | None = None,
    out_dir: str | Path | None = None,
    paraphrase_backbone: Backbone | None = None,
    force: bool = False,
    **params: Any,
) -> Path:
    """Build ``dataset`` (e.g. :data:`data_builders.LOCOMO`, or a registry entry's target)
    into ``out_dir/<name>/<granularity>`` and return the folder; an existing build with
    the same source sha256, builder version and parameters is reused unless ``force``.

    ``params``: build parameters (``dataset.params``); the rest keep their defaults.
    ``granularity``: one of the dataset's granularities (None: its first); a dataset
    without any (MemoryAgentBench) derives it from its params (``split``).
    """
    if dataset.plan is None:
        raise DatasetError(f"dataset {dataset.name!r} has no builder: its task kind builds it")
    out = Path(out_dir) if out_dir is not None else default_out_dir()
    checked = dataset.build_params(params)
    plan = dataset.plan(granularity, source, checked)
    gran = plan.granularity
    folder = out / dataset.name / gran
    p = checked.model_dump(mode="json")
    if paraphrase_backbone is not None:
        p = {**p, "paraphrase": f"{paraphrase_backbone.name}:{paraphrase_backbone.model}"}
    if not force and reusable(folder, plan.source_sha256, p):
        return folder
    res = plan.run()
    if paraphrase_backbone is not None:
        from data_builders.paraphrase import paraphrase_queries

        res.queries = paraphrase_queries(res.queries, paraphrase_backbone)
    manifest = make_manifest(
        dataset=dataset.name,
        granularity=gran,
        source_name=plan.source_name,
        source_sha256=plan.source_sha256,
        parameters=p,
        counts=compute_counts(res.streams, res.queries),
        dropped=dict(res.dropped_anchors),
        skipped=dict(res.skipped),
        caveats=res.caveats,
        field_provenance=dict(dataset.provenance),
        extra=res.extra,
    )
    _write(folder, res, manifest)
    return folder
