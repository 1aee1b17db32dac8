"""Published figures against a fresh re-run: what ``python -m chronobench verify`` compares.

A figure is a leaf of a run's ``metrics.json`` (named by its dotted path, e.g.
``selection.chronomem.recall_at_1.mean``) or the run's samples hash (``samples.sha256``:
every per-query row, so a drift that no aggregate shows is still seen). A re-run cell is
matched to its published copy by run id, which names everything the cell computes.
Re-scoring alone cannot see embedding drift, so the cells are run again from empty caches
(:mod:`chronobench.commands.verify`).
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronobench.leaderboard.runs import PUBLISHED_DIR
from chronobench.results.schema import MANIFEST_FILE, METRICS_FILE

#: The figure naming the hash of a run's per-sample rows.
SAMPLES_FIGURE = "samples.sha256"


@dataclass(frozen=True)
class Figure:
    """One figure of one run: published vs now, and whether they agree."""

    run_id: str
    name: str
    published: Any
    now: Any
    tolerance: float = 0.0

    @property
    def ok(self) -> bool:
        if isinstance(self.published, bool) is not isinstance(self.now, bool):
            return False  # True == 1.0 in Python; a flag is not a figure
        if self.published == self.now:
            return True
        if isinstance(self.published, bool):
            return False
        if isinstance(self.published, int | float) and isinstance(self.now, int | float):
            gap = abs(float(self.published) - float(self.now))
            return not math.isnan(gap) and gap <= self.tolerance
        return False

    def line(self) -> str:
        tol = f" (tolerance {self.tolerance:g})" if self.tolerance else ""
        mark = "DIFFERS" if not self.ok else "same" if self.published == self.now else "within"
        return (
            f"  {self.name}: published {_show(self.published)}, now {_show(self.now)} {mark}{tol}"
        )


@dataclass
class Comparison:
    """Every figure of every re-run cell, and the cells that could not be matched."""

    figures: list[Figure] = field(default_factory=list)
    unpublished: list[str] = field(default_factory=list)  # re-run ids with no published copy
    runs: list[str] = field(default_factory=list)

    @property
    def differing(self) -> list[Figure]:
        return [f for f in self.figures if not f.ok]

    @property
    def ok(self) -> bool:
        return bool(self.runs) and not self.differing and not self.unpublished


def _show(value: Any) -> str:
    if value is None:
        return "absent"
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value) if not isinstance(value, str) else value


def leaves(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted path, value)`` of every scalar in ``obj`` (lists indexed by position)."""
    if isinstance(obj, Mapping):
        for key in sorted(obj, key=str):
            yield from leaves(obj[key], f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(obj, list | tuple):
        for i, item in enumerate(obj):
            yield from leaves(item, f"{prefix}.{i}" if prefix else str(i))
    else:
        yield prefix, obj


def run_figures(folder: Path) -> dict[str, Any]:
    """A run folder's figures: its metrics.json leaves and its samples hash."""
    metrics = json.loads((folder / METRICS_FILE).read_text(encoding="utf-8"))
    out = dict(leaves(metrics))
    manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    out[SAMPLES_FIGURE] = (manifest.get("samples") or {}).get("sha256")
    return out


def tolerance_for(name: str, tolerances: Mapping[str, float]) -> float:
    """The largest tolerance whose pattern matches ``name`` (0 when none does)."""
    hits = [float(t) for pat, t in tolerances.items() if fnmatch.fnmatchcase(name, pat)]
    return max(hits, default=0.0)


def compare(
    results_dir: Path, fresh_runs: Path, tolerances: Mapping[str, float] | None = None
) -> Comparison:
    """Every finished run under ``fresh_runs`` against ``results_dir/published/<run id>``."""
    tolerances = tolerances or {}
    out = Comparison()
    for folder in sorted(p for p in Path(fresh_runs).glob("*") if p.is_dir()):
        if not (folder / METRICS_FILE).is_file():
            continue
        out.runs.append(folder.name)
        published = Path(results_dir) / PUBLISHED_DIR / folder.name
        if not (published / METRICS_FILE).is_file():
            out.unpublished.append(folder.name)
            continue
        was, now = run_figures(published), run_figures(folder)
        for name in sorted(set(was) | set(now)):
            out.figures.append(
                Figure(folder.name, name, was.get(name), now.get(name),
                       tolerance_for(name, tolerances))
            )  # fmt: skip
    return out


def report(comparison: Comparison, *, every_figure: bool = False) -> list[str]:
    """Lines to print: per run, the differing figures (every figure with
    ``every_figure``), then the unmatched runs."""
    lines: list[str] = []
    by_run: dict[str, list[Figure]] = {}
    for fig in comparison.figures:
        by_run.setdefault(fig.run_id, []).append(fig)
    for run_id, figs in by_run.items():
        bad = [f for f in figs if not f.ok]
        within = [f for f in figs if f.ok and f.published != f.now]
        state = f"{len(bad)} differ" if bad else "identical" if not within else "within tolerance"
        lines.append(f"{run_id}: {len(figs)} figures, {state}")
        shown = figs if every_figure else [*bad, *within]
        lines.extend(f.line() for f in shown)
    for run_id in comparison.unpublished:
        lines.append(f"{run_id}: re-run, but no published run has this id (DIFFERS)")
    return lines
