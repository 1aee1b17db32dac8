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
from chronobench.hashing import file_sha256
from chronobench.protocols import Backbone
from data_builders.errors import DatasetError
from data_builders.manifest import make_manifest, reusable
from data_builders.result import BuildResult
from data_builders.stats import compute_counts

LOCOMO_DEFAULTS: dict[str, Any] = {
    "max_queries_per_stream": 40,
    "max_answerable": 3,
    "max_future": 3,
    # Boundary probes per side (data_builders/boundary.py): answerable
    # QA of the session at v*, future QA of the first session after it.
    "max_boundary": 10,
    # Recall probes per side ("Is it true that <observation>?", data_builders/boundary.py).
    "max_recall": 6,
    # The stream's question battery (data_builders/battery.py): per session, QA items,
    # true recall statements and as many false ones, category-5 items.
    "battery_qa": 8,
    "battery_recall": 4,
    "battery_adversarial": 1,
    "jaccard_threshold": 0.5,
    # data_builders/uniqueness.py: drop an anchor when one annotation record of another
    # episode covers >= 40% of its key-term weight, or its key terms weigh < 1 in all.
    "annotation_share": 0.4,
    "annotation_min_weight": 1.0,
    "seed": 0,
    "strict": False,
}
MAB_DEFAULTS: dict[str, Any] = {
    "revision": "62a64e5da0d95cd447e6da0c19ebce4efbd80a74",  # pinned dataset commit (data_builders/mab/source.py)
    "chunk_size": 512,
    "chunk_unit": "tokens",
    "max_queries_per_stream": 40,
    "max_answerable": 3,
    "max_future": 3,
    "battery_qa": 4,  # battery QA items per write (data_builders/battery.py)
    "jaccard_threshold": 0.5,
    "seed": 0,
}
# Each builder's parameters and their defaults, by the builder's name (the one source).
BUILD_DEFAULTS: dict[str, dict[str, Any]] = {"locomo": LOCOMO_DEFAULTS, "mab": MAB_DEFAULTS}


def default_out_dir() -> Path:
    """``data/built`` under the repository root (found by walking up to pyproject.toml),
    else under the current directory."""
    for d in (Path(__file__).resolve().parent, *Path(__file__).resolve().parents):
        if (d / "pyproject.toml").is_file():
            return d / "data" / "built"
    return Path.cwd() / "data" / "built"


def _params(defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise TypeError(f"unknown build parameter(s) {unknown}; known: {sorted(defaults)}")
    return {**defaults, **given}


def _write(folder: Path, res: BuildResult, manifest: dict[str, Any]) -> None:
    write_jsonl(folder / STREAMS_FILE, res.streams)
    write_jsonl(folder / QUERIES_FILE, res.queries)
    write_jsonl(folder / POOLS_FILE, res.pools)
    write_json(folder / MANIFEST_FILE, manifest)  # last: its presence marks a complete build


def build_dataset(
    name: str,
    *,
    granularity: str | None = None,
    source: str | Path | None = None,
    out_dir: str | Path | None = None,
    paraphrase_backbone: Backbone | None = None,
    force: bool = False,
    **params: Any,
) -> Path:
    """Build ``name`` ("locomo" | "mab") into ``out_dir/<name>/<granularity or split>`` and
    return the folder; an existing build with the same source sha256, builder version and
    parameters is reused unless ``force``.

    LoCoMo: ``granularity`` is session (default), turn or observation. MAB: pass
    ``split=...``; ``granularity`` is derived (statement or chunk size + unit).
    """
    out = Path(out_dir) if out_dir is not None else default_out_dir()
    if name == "locomo":
        from data_builders.locomo import build_locomo, resolve_locomo_source

        gran = granularity or "session"
        p = _params(LOCOMO_DEFAULTS, params)
        src = resolve_locomo_source(source)
        sha, src_name = file_sha256(src), src.name
        folder = out / "locomo" / gran

        def run() -> BuildResult:
            return build_locomo(src, gran, **p)

    elif name == "mab":
        from data_builders.mab import build_mab, load_mab_rows

        split = params.pop("split", None)
        if not split:
            raise DatasetError("MAB needs a split, e.g. split='Accurate_Retrieval'")
        p = _params(MAB_DEFAULTS, params)
        rows, src_name, sha = load_mab_rows(split, source, p["revision"])
        gran = split
        folder = out / "mab" / split
        p = {**p, "split": split}

        def run() -> BuildResult:
            kw = {k: v for k, v in p.items() if k not in ("split", "revision")}
            return build_mab(split, rows=rows, **kw)

    else:
        raise DatasetError(f"unknown dataset {name!r}; choose 'locomo' or 'mab'")
    if paraphrase_backbone is not None:
        p = {**p, "paraphrase": f"{paraphrase_backbone.name}:{paraphrase_backbone.model}"}
    if not force and reusable(folder, sha, p):
        return folder
    res = run()
    if paraphrase_backbone is not None:
        from data_builders.paraphrase import paraphrase_queries

        res.queries = paraphrase_queries(res.queries, paraphrase_backbone)
    manifest = make_manifest(
        dataset=name,
        granularity=gran,
        source_name=src_name,
        source_sha256=sha,
        parameters=p,
        counts=compute_counts(res.streams, res.queries),
        dropped=dict(res.dropped_anchors),
        skipped=dict(res.skipped),
        caveats=res.caveats,
        extra=res.extra,
    )
    _write(folder, res, manifest)
    return folder
