"""One cell of an experiment: resolved :class:`Components` -> ``<results_dir>/runs/<run-id>/``."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from chronobench.errors import ConfigError
from chronobench.fileio import atomic_write_json, atomic_write_text
from chronobench.hashing import file_sha256
from chronobench.protocols import PROTOCOL_VERSION
from chronobench.results.io import SampleLog
from chronobench.results.metrics_file import MetricsFile, RunMetrics
from chronobench.results.provenance import git_revision, library_versions
from chronobench.results.records import SampleRecord
from chronobench.results.schema import VOLATILE_FILE, Manifest, Volatile
from chronobench.runner.components import TASKS, Components, needs_backbone, resolve_cell
from chronobench.runner.params import answer_chunk, reads_replies
from chronobench.runner.task_kind import as_task_kind
from chronobench.spec import RunSpec, run_id, spec_from_config, spec_sha256


def generation_kinds(spec: RunSpec) -> set[str]:
    kinds = set()
    if spec.task.qa:
        kinds |= {"qa", "future_qa", "final_qa"}
        subset = spec.dataset.subset
        if subset is not None and not subset.system_finals:
            kinds.discard("final_qa")  # reported only; the known set still asks them
    if spec.task.summary:
        kinds.add("summary")
    return kinds


def make_run_id(
    spec: RunSpec | dict[str, Any], dataset_sha256: str = "", queries_sha256: str | None = None
) -> str:
    """The run id of a spec (or a resolved config dict) on a built dataset: of the spec
    as :func:`resolve_cell` completes it (every option of the system's model named)."""
    if not isinstance(spec, RunSpec):
        spec = spec_from_config(spec)
    return run_id(resolve_cell(spec).spec, dataset_sha256, queries_sha256)


def run_cell(cell: Components | RunSpec | dict[str, Any]) -> Path:
    """Run (or resume) one cell with its task kind's registered runner; returns its folder.

    ``cell``: what :func:`~chronobench.runner.components.resolve_cell` returned (a spec
    or a resolved config dict is resolved first)."""
    if not isinstance(cell, Components):
        spec = cell if isinstance(cell, RunSpec) else spec_from_config(cell)
        cell = resolve_cell(spec)
    return cell.run()


def run_dir_of(spec: RunSpec, rid: str) -> Path:
    """``<results_dir>/runs/<run-id>`` as an absolute path."""
    return (Path(spec.paths.results_dir) / "runs" / rid).resolve()


def prepare_run_dir(spec: RunSpec, rid: str, config: dict[str, Any] | None = None) -> Path:
    """Create (or reset with ``overwrite``) a run folder and write its ``config.yaml``."""
    import yaml

    run_dir = run_dir_of(spec, rid)
    if spec.overwrite and run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    _warn_if_code_changed(run_dir)
    # The recorded spec: no paths and no run-time flags, so the file is the same
    # wherever and however the cell runs.
    body = config if config is not None else spec.recorded()
    atomic_write_text(run_dir / "config.yaml", yaml.safe_dump(body, sort_keys=True))
    return run_dir


def build_benchmark_parts(cell: Components, backbone: bool = True) -> list[str]:
    """Build every component a benchmark cell constructs, as :func:`run_benchmark_cell`
    builds them, without data or weights (hash vectors); names what was built."""
    from chronobench.protocols import GenerationParams
    from chronobench.systems import SystemContext
    from chronomem import ChronoMem, HashEmbedder

    spec = cell.spec
    if cell.dataset is None:
        raise ConfigError(f"{spec.describe()}: a benchmark cell needs a dataset")
    built = [f"dataset {cell.dataset.load().name}"]
    provider = cell.build_store_provider()  # builds the reranker
    built.append(type(provider.store_options.get("reranker")).__name__)
    try:
        # The store with the retriever's and reranker's options (hash vectors: no weights).
        ChronoMem(":memory:", embedder=HashEmbedder(), **provider.store_options).close()
        gen = spec.backbone.generation
        params = GenerationParams(
            max_new_tokens=gen.max_new_tokens, temperature=gen.temperature, top_p=gen.top_p
        )
        # As the runner: the backbone only for a system that consults it (the resolver).
        own = cell.build_backbone() if spec.resolver != "none" and backbone else None
        system = cell.build_system(SystemContext(params=params, stores=provider, backbone=own))
        built.append(type(system).__name__)
        system.close()
        if own is not None:
            own.close()
        built += [type(cell.build_selector(n, provider)).__name__ for n in cell.selectors]
    finally:
        provider.close()
    if backbone:
        made = cell.build_backbone()
        built.append(type(made.inner if hasattr(made, "inner") else made).__name__)
        made.close()
    return built


def run_benchmark_cell(cell: Components) -> Path:
    """The benchmark task: RQ1 selection and/or RQ2/RQ3 generation on one dataset."""
    from chronobench.runner.metrics_io import compute_metrics, summary_table
    from chronobench.runner.params import generation_params
    from chronobench.systems import SystemContext, is_oracle

    spec = cell.spec
    t0 = time.perf_counter()
    # The backbone first: a bad model fails before any work.
    backbone = cell.build_backbone() if needs_backbone(spec) else None
    data = cell.load_data(backbone if spec.dataset.paraphrase else None)
    t_data = time.perf_counter()
    rid = run_id(spec, data.manifest_sha256, data.queries_sha256)
    run_dir = prepare_run_dir(spec, rid)
    log = SampleLog(run_dir / "samples.jsonl")
    done = log.done_ids()
    k = int(spec.task.k)
    stores = cell.build_store_provider()
    embed_before = _embedding_stats(stores)
    backbone_stats: dict[str, Any] = {}
    timings: dict[str, float] = {"load_data_s": round(t_data - t0, 3)}
    try:
        if spec.task.selection:
            from chronobench.runner.selection import run_selection

            t = time.perf_counter()
            run_selection(data, cell, stores, log, done, k=k, progress=spec.progress)
            timings["selection_s"] = round(time.perf_counter() - t, 3)
        kinds = generation_kinds(spec)
        if kinds:
            from chronobench.runner.generation import run_generation

            t = time.perf_counter()
            params = generation_params(spec)
            # The backbone only for a system configured to consult it (the resolver).
            own = backbone if spec.resolver != "none" else None
            system = cell.build_system(SystemContext(params=params, stores=stores, backbone=own))
            run_generation(
                data,
                system,
                backbone,
                log,
                done,
                kinds=kinds,
                chunk_size=answer_chunk(spec),
                progress=spec.progress,
                oracle=is_oracle(spec.system.name),
                seed=int(spec.seed),
                read_replies=reads_replies(spec),
            )
            timings["generation_s"] = round(time.perf_counter() - t, 3)
    finally:
        embedding_stats = _stats_delta(embed_before, _embedding_stats(stores))
        stores.close()

    records = log.read_checked()
    known, known_sha = None, None
    if spec.task.qa:
        from chronobench.runner.known import RQ2_READER, reference_known, write_known

        t = time.perf_counter()
        known, known_sha = reference_known(spec, data, backbone, RQ2_READER)
        write_known(run_dir, known, known_sha, RQ2_READER)
        timings["known_s"] = round(time.perf_counter() - t, 3)
    if backbone is not None:  # the cell's calls, the known set's reference reader's included
        backbone_stats = dict(getattr(backbone, "stats", {}) or {})
    metrics = compute_metrics(records, seed=int(spec.seed), known=known)
    timings["total_s"] = round(time.perf_counter() - t0, 3)
    write_results(
        run_dir,
        spec,
        rid,
        metrics=metrics,
        k=k,
        dataset=data_info(data),
        rows=records,
        timings=timings,
        backbone_stats=backbone_stats,
        embedding_stats=embedding_stats,
        known_sha256=known_sha,
    )
    from chronobench.runner.drilldown import write_cell_queries

    write_cell_queries(run_dir, rid, cell_summary(spec), data, records, known)
    print(summary_table(rid, metrics))
    return run_dir


def _embedding_stats(stores: Any) -> dict[str, int]:
    """The embedding cache's counters (process-wide) when the stores have an embedder."""
    embedder = getattr(stores, "_embedder", None)  # never built just to be read
    if embedder is None:
        return {}
    from chronomem.embedders import shared_cache

    stats = shared_cache(embedder).stats
    return {k: int(stats.get(k, 0)) for k in ("hits", "disk_hits", "embedded")}


def _stats_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after}


def data_folder(folder: str | Path, data_dir: str | Path) -> str:
    """A built dataset's folder as a manifest records it: relative to ``data_dir``
    (``7da95f06/locomo/session``), never an absolute path."""
    path, root = Path(folder).resolve(), Path(data_dir).resolve()
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        from chronobench.paths import portable

        return portable(str(folder)) or ""


def data_info(data: Any) -> dict[str, Any]:
    """The ``dataset`` block of a manifest from a loaded RunData (``folder`` as given;
    :func:`write_results` makes it relative to the run's data folder)."""
    return {
        "folder": str(data.folder),
        "manifest_sha256": data.manifest_sha256,
        "source_sha256": (data.manifest.get("source") or {}).get("sha256"),
        "queries_sha256": data.queries_sha256,
        "n_streams": len(data.streams),
        "n_queries": len(data.queries),
    }


def publishable(spec: RunSpec) -> bool:
    """Whether ``leaderboard`` may put this run on the board: the data allow it
    (``spec.published``: no fixture, no debugging cut), the run was made by the main job or
    a named preset (``publish``), and its backbone's answers mean something (an ``export``
    run only records prompts). An ad-hoc run stays local even if ``leaderboard`` is run
    afterwards."""
    from chronobench.backbones.registry import BACKBONES

    name = spec.backbone.name
    answers = not (
        name in BACKBONES.names() and BACKBONES.entry(name).meta.get("publishes") is False
    )
    return spec.published and spec.publish and answers


def write_results(
    run_dir: Path,
    spec: RunSpec,
    rid: str,
    *,
    metrics: RunMetrics | dict[str, Any],
    k: int,
    dataset: dict[str, Any],
    rows: Sequence[SampleRecord | Mapping[str, Any]],
    timings: dict[str, float],
    backbone_stats: dict[str, Any] | None = None,
    embedding_stats: dict[str, Any] | None = None,
    known_sha256: str | None = None,
) -> None:
    """Write ``metrics.json``, ``volatile.json``, then ``manifest.json`` (atomically,
    schema-validated): the manifest holds the run's identity only, the volatile file
    :data:`~chronobench.results.schema.VOLATILE_FIELDS`.

    Other task kinds' cell runners call this too, so every run folder has one shape.
    """
    samples = run_dir / "samples.jsonl"
    samples_sha = file_sha256(samples) if samples.is_file() else None
    published = publishable(spec) or _reproduces_published(run_dir, spec, samples_sha)
    atomic_write_json(run_dir / "metrics.json", MetricsFile.of(rid, k, metrics).to_json())
    volatile = Volatile(
        run_id=rid,
        finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        git=git_revision(),
        libraries=library_versions(),
        timings=timings,
        backbone_calls=dict(backbone_stats or {}),
        embedding_cache=dict(embedding_stats or {}),
    )
    atomic_write_json(run_dir / VOLATILE_FILE, volatile.model_dump(mode="json"))
    manifest = Manifest(
        run_id=rid,
        protocol=PROTOCOL_VERSION,
        spec=spec.recorded(),
        spec_sha256=spec_sha256(spec),
        cell=cell_summary(spec),
        published=published,
        seed=spec.seed,
        dataset={**dataset, "folder": data_folder(dataset["folder"], spec.paths.data_dir)},
        samples={
            "sha256": samples_sha,
            "n": len(rows),
            "selection": sum(1 for r in rows if _kind(r) == "selection"),
            "probes": sum(1 for r in rows if _kind(r) == "probe"),
        },
        known_sha256=known_sha256,
    )
    atomic_write_json(run_dir / "manifest.json", manifest.model_dump(mode="json"))


def _reproduces_published(run_dir: Path, spec: RunSpec, samples_sha: str | None) -> bool:
    """Whether the folder holds a published run of this spec whose samples this rewrite
    reproduces byte for byte. An ad-hoc rerun of the same cell (an audit reading a main-job
    run, a resume with ``publish=false``) is then the same run, and must not take it off
    the board; a rerun whose samples differ is a new, local run."""
    try:
        prior = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        spec.published
        and samples_sha is not None
        and prior.get("published") is True
        and prior.get("spec_sha256") == spec_sha256(spec)
        and (prior.get("samples") or {}).get("sha256") == samples_sha
    )


def _kind(record: SampleRecord | Mapping[str, Any]) -> Any:
    return record.kind if isinstance(record, SampleRecord) else record.get("kind")


def cell_summary(spec: RunSpec) -> dict[str, Any]:
    """The manifest's flat ``cell`` block (what notebooks and people read)."""
    gen = spec.task.generates
    # A run of the main tables that generates nothing (RQ1 only) ranks selectors, no
    # system; every other track's cell runs its system.
    kind = spec.task.kind
    tables = kind in TASKS and as_task_kind(TASKS.entry(kind).load()).tables
    return {
        "dataset": spec.dataset.name,
        "granularity": spec.dataset.granularity,
        "system": spec.system.name if gen or not tables else None,
        "backbone": spec.backbone.name if gen else None,
        "model": spec.backbone.model if gen else None,
        "task": spec.task.model_dump(mode="json"),
        "selectors": list(spec.selectors) if spec.task.selection else [],
        "queries": Path(spec.dataset.queries_file).stem if spec.dataset.queries_file else "built",
    }


def _warn_if_code_changed(run_dir: Path) -> None:
    """Resuming across a code change mixes samples from two versions: say so."""
    import json

    before = None
    for old in (run_dir / VOLATILE_FILE, run_dir / "manifest.json"):  # 2.0: in the manifest
        try:
            before = (json.loads(old.read_text()).get("git") or {}).get("commit")
        except (OSError, ValueError, AttributeError):
            continue
        if before:
            break
    if not before:
        return
    now = git_revision().get("commit")
    if before and now and before != now:
        print(
            f"warning: resuming {run_dir.name}, first run at commit {before[:10]}, now at "
            f"{now[:10]}; pass overwrite=true to recompute every sample with this code"
        )
