"""One cell of an experiment: (dataset, system, backbone, task) -> ``results/runs/<run-id>/``."""

from __future__ import annotations

import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from chronobench.runner.artifacts import (
    RESULTS_SCHEMA_VERSION,
    SampleLog,
    atomic_write_json,
    atomic_write_text,
)
from chronobench.runner.datasets import load_run_data
from chronobench.runner.metrics_io import compute_metrics, summary_table
from chronobench.runner.provenance import config_hash, git_revision, library_versions


def _generation_wanted(task: dict[str, Any]) -> set[str]:
    kinds = set()
    if task.get("qa"):
        kinds |= {"qa", "future_qa", "final_qa"}
    if task.get("summary"):
        kinds.add("summary")
    return kinds


def cell_identity(cfg: dict[str, Any]) -> dict[str, Any]:
    """The parts of a config that define what a cell computes (and so its run id)."""
    task = cfg["task"]
    ident: dict[str, Any] = {
        "dataset": cfg["dataset"],
        "task": task,
        "seed": cfg["seed"],
        "embedder": cfg["embedder"],
        "retriever": cfg["retriever"],
        "reranker": cfg["reranker"],
    }
    if task.get("selection"):
        ident["selectors"] = list(cfg["selectors"])
    if _generation_wanted(task):
        ident["system"] = cfg["system"]
        ident["backbone"] = {k: v for k, v in cfg["backbone"].items() if k != "chunk_size"}
    return ident


def make_run_id(cfg: dict[str, Any], dataset_sha256: str = "") -> str:
    """``<dataset>-<granularity>__<system>__<backbone>__<task>__<hash>``; stable, so
    rerunning the same cell on the same built data resumes it. The hash covers the cell's
    config and the dataset manifest, so a rebuilt dataset never resumes stale samples."""
    d = cfg["dataset"]
    task = cfg["task"]
    parts = [f"{d['name']}-{d['granularity']}"]
    if _generation_wanted(task):
        model = str(cfg["backbone"]["model"]).split("/")[-1]
        parts += [cfg["system"]["name"], f"{cfg['backbone']['name']}-{model}"]
    else:
        parts.append("selection")
    tag = "+".join(k for k in ("selection", "qa", "summary") if task.get(k))
    ident = {**cell_identity(cfg), "dataset_manifest_sha256": dataset_sha256}
    parts += [tag, config_hash(ident)]
    return "__".join(p.replace("/", "-").replace(" ", "") for p in parts)


def make_reranker(rcfg: dict[str, Any]) -> Any:
    """The ``reranker`` config group -> a reranker object (or None)."""
    from chronobench.memory import CrossEncoderReranker, DeltaReranker

    name = rcfg.get("name", "none")
    if name == "none":
        return None
    if name == "feature":
        return DeltaReranker()
    if name == "cross_encoder":
        return CrossEncoderReranker(rcfg["model"])
    raise ValueError(f"reranker.name={name!r}; choose none, feature or cross_encoder")


def make_store_provider(cfg: dict[str, Any]) -> Any:
    """The store settings of a run (embedder, fusion, reranker)."""
    from chronobench.systems.stores import StoreProvider

    return StoreProvider(
        embedder=cfg["embedder"]["model"],
        reranker=make_reranker(cfg["reranker"]),
        rrf_k0=int(cfg["retriever"]["rrf_k0"]),
        depth=int(cfg["retriever"]["candidates"]),
        rerank_depth=int(cfg["reranker"].get("top_k", 20)),
    )


def make_backbone(cfg: dict[str, Any]) -> Any:
    """The configured backbone behind the persistent call cache."""
    from chronobench.backbones import CachedBackbone, create_backbone

    b = cfg["backbone"]
    inner = create_backbone(b["name"], model=b["model"], **dict(b.get("params") or {}))
    cache_path = Path(cfg["paths"]["cache_dir"]) / "llm_cache.sqlite"
    return CachedBackbone(inner, cache_path)


def run_cell(cfg: dict[str, Any]) -> Path:
    """Run (or resume) one cell and return its run folder."""
    from chronobench.protocols import GenerationParams
    from chronobench.systems import SystemContext, create_system

    t0 = time.perf_counter()
    progress = bool(cfg.get("progress", True))
    # Built once and shared by the paraphrase step and generation: a vLLM engine is costly.
    backbone = make_backbone(cfg) if cfg["dataset"].get("paraphrase") else None
    data = load_run_data(cfg["dataset"], cfg["paths"]["data_dir"], backbone)
    t_data = time.perf_counter()
    run_id = make_run_id(cfg, data.manifest_sha256)
    run_dir = Path(cfg["paths"]["results_dir"]) / "runs" / run_id
    if cfg.get("overwrite") and run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    _warn_if_code_changed(run_dir)
    import yaml

    atomic_write_text(run_dir / "config.yaml", yaml.safe_dump(cfg, sort_keys=True))
    log = SampleLog(run_dir / "samples.jsonl")
    done = log.done_ids()
    task = cfg["task"]
    k = int(task.get("k", 5))
    stores = make_store_provider(cfg)
    backbone_stats: dict[str, Any] = {}
    timings: dict[str, float] = {"load_data_s": round(t_data - t0, 3)}
    try:
        if task.get("selection"):
            from chronobench.runner.selection import run_selection

            t = time.perf_counter()
            run_selection(data, cfg["selectors"], stores, log, done, k=k, progress=progress)
            timings["selection_s"] = round(time.perf_counter() - t, 3)
        kinds = _generation_wanted(task)
        if kinds:
            from chronobench.runner.generation import run_generation

            t = time.perf_counter()
            gen = dict(cfg["backbone"].get("generation") or {})
            params = GenerationParams(
                max_new_tokens=int(gen.get("max_new_tokens", 128)),
                temperature=float(gen.get("temperature", 0.0)),
                top_p=float(gen.get("top_p", 1.0)),
                seed=int(cfg["seed"]),
            )
            ctx = SystemContext(params=params, stores=stores)
            scfg = {k_: v for k_, v in cfg["system"].items() if k_ not in ("name", "kind")}
            system = create_system(cfg["system"]["name"], ctx, **scfg)
            backbone = backbone or make_backbone(cfg)
            run_generation(
                data,
                system,
                backbone,
                log,
                done,
                kinds=kinds,
                chunk_size=int(cfg["backbone"].get("chunk_size", 0)),
                progress=progress,
            )
            backbone_stats = dict(getattr(backbone, "stats", {}) or {})
            timings["generation_s"] = round(time.perf_counter() - t, 3)
    finally:
        stores.close()

    rows = log.read()
    metrics = compute_metrics(rows, seed=int(cfg["seed"]))
    timings["total_s"] = round(time.perf_counter() - t0, 3)
    atomic_write_json(
        run_dir / "metrics.json",
        {"schema_version": RESULTS_SCHEMA_VERSION, "run_id": run_id, "k": k, "metrics": metrics},
    )
    atomic_write_json(
        run_dir / "manifest.json", _manifest(cfg, run_id, data, rows, timings, backbone_stats)
    )
    print(summary_table(run_id, metrics))
    return run_dir


def _warn_if_code_changed(run_dir: Path) -> None:
    """Resuming across a code change mixes samples from two versions: say so."""
    old = run_dir / "manifest.json"
    if not old.exists():
        return
    import json

    before = json.loads(old.read_text()).get("git", {}).get("commit")
    now = git_revision().get("commit")
    if before and now and before != now:
        print(
            f"warning: resuming {run_dir.name}, first run at commit {before[:10]}, now at "
            f"{now[:10]}; pass overwrite=true to recompute every sample with this code"
        )


def _manifest(
    cfg: dict[str, Any],
    run_id: str,
    data: Any,
    rows: list[dict[str, Any]],
    timings: dict[str, float],
    backbone_stats: dict[str, Any],
) -> dict[str, Any]:
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "run_id": run_id,
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git": git_revision(),
        "libraries": library_versions(),
        "seed": cfg["seed"],
        "cell": {
            "dataset": cfg["dataset"]["name"],
            "granularity": cfg["dataset"]["granularity"],
            "system": cfg["system"]["name"] if _generation_wanted(cfg["task"]) else None,
            "backbone": cfg["backbone"]["name"] if _generation_wanted(cfg["task"]) else None,
            "model": cfg["backbone"]["model"] if _generation_wanted(cfg["task"]) else None,
            "task": cfg["task"],
            "selectors": list(cfg["selectors"]) if cfg["task"].get("selection") else [],
            # Which rollback requests: the built ones, or a user file (a different query set).
            "queries": Path(cfg["dataset"]["queries_file"]).stem
            if cfg["dataset"].get("queries_file")
            else "built",
        },
        "dataset": {
            "folder": str(data.folder),
            "manifest_sha256": data.manifest_sha256,
            "source_sha256": data.manifest.get("source_sha256"),
            "n_streams": len(data.streams),
            "n_queries": len(data.queries),
        },
        "counts": {
            "samples": len(rows),
            "selection": sum(1 for r in rows if r["kind"] == "selection"),
            "probes": sum(1 for r in rows if r["kind"] == "probe"),
        },
        "timings": timings,
        "backbone_calls": backbone_stats,
    }
