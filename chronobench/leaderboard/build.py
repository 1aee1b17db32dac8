"""Aggregate ``results/runs/*`` into tables shaped like the ChronoMem paper's Tables 2-7.

Rebuilding from the same runs gives byte-identical files: no timestamps in the output,
everything sorted, and for each table cell the newest finished run of that cell wins
(ties broken by run id).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronobench.leaderboard.tables import render_csv, render_markdown


@dataclass(frozen=True)
class RunRecord:
    """A finished run: its identity and metrics."""

    run_id: str
    dataset: str
    granularity: str
    system: str | None
    backbone: str | None
    model: str | None
    selectors: tuple[str, ...]
    queries: str
    finished_at: str
    metrics: dict[str, Any]

    @property
    def backbone_label(self) -> str:
        if self.backbone == "extractive":
            return "extractive (no LLM)"
        return str(self.model).split("/")[-1] if self.model else str(self.backbone)


def collect_runs(results_dir: Path) -> list[RunRecord]:
    """Every run folder under ``results_dir/runs`` that has both manifest and metrics."""
    runs = []
    for folder in sorted((results_dir / "runs").glob("*")):
        man, met = folder / "manifest.json", folder / "metrics.json"
        if not (man.exists() and met.exists()):
            continue
        m = json.loads(man.read_text())
        cell = m["cell"]
        runs.append(
            RunRecord(
                run_id=m["run_id"],
                dataset=cell["dataset"],
                granularity=cell["granularity"],
                system=cell.get("system"),
                backbone=cell.get("backbone"),
                model=cell.get("model"),
                selectors=tuple(cell.get("selectors") or ()),
                queries=cell.get("queries", "built"),
                finished_at=m.get("finished_at", ""),
                metrics=json.loads(met.read_text())["metrics"],
            )
        )
    return runs


def _latest(runs: list[RunRecord]) -> list[RunRecord]:
    return sorted(runs, key=lambda r: (r.finished_at, r.run_id))


def build_tables(runs: list[RunRecord]) -> dict[str, Any]:
    """``{(dataset, granularity, query set): {"selection": {...}, "systems": {...}}}``."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in _latest(runs):
        key3 = (r.dataset, r.granularity, r.queries)
        slot = out.setdefault(key3, {"selection": {}, "systems": {}})
        for name, groups in (r.metrics.get("selection") or {}).items():
            slot["selection"][name] = (groups, r.run_id)  # later runs overwrite earlier
        if r.system and r.metrics.get("probes"):
            key = (r.system, r.backbone_label)
            prev = slot["systems"].get(key)
            merged = dict(prev[0]) if prev else {}
            # A qa run and a summary run of the same cell fill different fields: merge them.
            for group, stats in r.metrics["probes"].items():
                if isinstance(stats, dict) and group == "all":
                    merged.setdefault("all", {}).update(stats)
                else:
                    merged[group] = stats
            runs_ids = (prev[1] + ", " if prev else "") + r.run_id
            slot["systems"][key] = (merged, runs_ids)
    return out


def write_leaderboard(results_dir: Path) -> Path:
    """Write ``LEADERBOARD.md`` and ``LEADERBOARD.csv`` into ``results_dir``; returns the .md path."""
    from chronobench.runner.artifacts import atomic_write_text

    tables = build_tables(collect_runs(results_dir))
    md_path = results_dir / "LEADERBOARD.md"
    atomic_write_text(md_path, render_markdown(tables))
    atomic_write_text(results_dir / "LEADERBOARD.csv", render_csv(tables))
    return md_path
