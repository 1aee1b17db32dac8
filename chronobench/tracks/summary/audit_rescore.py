"""A main-job summary cell's RQ3 figures under today's probes.

A run's samples keep the probe they were scored against; a probe field added since (the
headline's ``meta.last_session_words``) is not in them. Re-scoring swaps in today's
probe of the same id (same build parameters, same query) and scores the recorded
prediction with :func:`~chronobench.metrics.score_probe`: the system is not run again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from chronobench.audit.contract import Interval
from chronobench.errors import ResultsError

__all__ = ["chronomem_interval", "find_cells", "rescored_rows"]


def find_cells(results: Path, folder: str) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every run under ``results/<folder>`` that is a LoCoMo-session main-job cell with
    summary probes and the extractive backbone: ``(run folder, manifest)``."""
    root = results / folder
    if not root.is_dir():
        return
    for run in sorted(root.iterdir()):
        path = run / "manifest.json"
        if not path.is_file():
            continue
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if _main_cell(manifest):
            yield run, manifest


def _main_cell(manifest: Mapping[str, Any]) -> bool:
    """A main-job cell (built LoCoMo session queries, extractive reader) with summaries."""
    cell = manifest.get("cell") or {}
    task = cell.get("task") or {}
    return (
        cell.get("dataset") == "locomo"
        and cell.get("granularity") == "session"
        and cell.get("backbone") == "extractive"
        and cell.get("queries") == "built"
        and task.get("kind") == "benchmark"
        and bool(task.get("summary"))
    )


def rescored_rows(samples: Path, probes: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary rows of ``samples`` (a samples.jsonl), each with today's probe of the
    same id (``probes``: probe id -> Probe) and its scores recomputed."""
    from chronobench.metrics import score_probe

    out = []
    missing = []
    for row in _lines(samples):
        if row.get("kind") != "probe" or row.get("probe_kind") != "summary":
            continue
        if row.get("status", "ok") != "ok":
            continue
        pid = row["probe"]["probe_id"]
        probe = probes.get(pid)
        if probe is None:
            missing.append(pid)
            continue
        out.append(
            {
                **row,
                "probe": probe.model_dump(mode="json"),
                "scores": score_probe(probe, row["prediction"]),
            }
        )
    if missing:
        raise ResultsError(
            f"{samples}: {len(missing)} summary probes (e.g. {missing[0]!r}) are not in "
            "today's build; rebuild the data with the run's dataset parameters"
        )
    return out


def chronomem_interval(
    results: Path, data: Any, system: str, field: str
) -> tuple[Interval, str, str]:
    """``system``'s ``field`` interval from the main job: its published metrics.json
    when it holds the field, else its samples under ``results/runs`` re-scored."""
    from chronobench.audit.data import published_interval

    def headline(manifest: Mapping[str, Any]) -> bool:
        return _main_cell(manifest) and manifest["cell"].get("system") == system

    try:
        path = ("metrics", "probes", "all", field)
        interval = published_interval(results, headline, path)
        return interval, system, f"{system}'s interval: its published main-job row"
    except LookupError as exc:
        unpublished = str(exc)
    for run, manifest in find_cells(results, "runs"):
        if manifest["cell"].get("system") != system or not (run / "samples.jsonl").is_file():
            continue
        from chronobench.runner.metrics_io import compute_metrics

        probes = {p.probe_id: p for q in data.queries for p in q.probes if p.kind == "summary"}
        rows = rescored_rows(run / "samples.jsonl", probes)
        stat = compute_metrics(rows).probes.all[field].model_dump()
        where = f"{system}'s interval: {run.name}'s samples re-scored with today's probes"
        return _interval(stat), system, where
    raise ResultsError(
        f"{unpublished}; and no {system} LoCoMo-session summary cell with samples under "
        f"{results / 'runs'}: run the main job (`python -m chronobench run`) or pass --results"
    )


def _interval(stat: dict[str, Any]) -> Interval:
    return Interval(mean=stat["mean"], lo=stat["ci_low"], hi=stat["ci_high"], n=stat["n"])


def _lines(path: Path) -> Iterable[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
