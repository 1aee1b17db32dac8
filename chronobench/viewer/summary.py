"""The first page's figures, per build: a strip of one line per question (its best
system against its best floor, the gap, whether the intervals overlap), one table of the
headlines (RQ1 R@1, RQ2 RC-QA, RQ3 last-session coverage, RQ4 selective forgetting, the
memory systems, repair recovery) with their 95% CIs and the best floor beside each, and
the data of the plots.

Figures are read from each run's ``metrics.json`` as the leaderboard reads them; labels,
order and which rows are floors come from the registries (a system registered with
``floor``; a repair method named ``text_floor*``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chronobench.results.metrics_file import Stat as StoredStat
from chronobench.results.metrics_file import figure_text
from chronobench.viewer.collect import Build, ViewRun

#: The RQ1 headline's request set (the leaderboard's), then what to fall back on.
RQ1_SETS = ("locomo_v3_heldout", "built")


@dataclass(frozen=True)
class Stat:
    """A figure as the site shows it: already x100, its 95% interval and count optional.

    Not :class:`chronobench.results.metrics_file.Stat`, the statistic a run stores (a
    fraction, its count always given): a shown figure may also be a share the viewer
    computes itself with no interval (a memory system's own R@1); :meth:`of` converts a
    stored one, and both print through :func:`~chronobench.results.metrics_file.figure_text`.
    """

    mean: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None

    @classmethod
    def of(cls, entry: StoredStat | dict[str, Any] | None, scale: float = 100.0) -> Stat | None:
        """The shown figure of a stored statistic (typed, or its JSON object); None
        without one or without a mean."""
        if isinstance(entry, StoredStat):
            entry = entry.to_json()
        if not entry or entry.get("mean") is None:
            return None

        def s(k: str) -> float | None:
            return None if entry.get(k) is None else scale * float(entry[k])

        return cls(s("mean"), s("ci_low"), s("ci_high"), entry.get("n"))

    def text(self) -> str:
        return figure_text(self.mean, self.low, self.high)


@dataclass(frozen=True)
class Row:
    """One line of the summary table."""

    section: str
    label: str
    stat: Stat | None
    floor: tuple[str, Stat] | None = None
    run_id: str | None = None
    is_floor: bool = False
    # An upper bound handed the gold (registered ``oracle``): never the "best system".
    is_oracle: bool = False


@dataclass(frozen=True)
class Strip:
    """One question's headline: its best system against its best floor (or, where the
    question has no floor, the runner-up), the gap and whether the intervals overlap."""

    section: str
    best: Row
    other: Row | None
    other_kind: str  # "floor" or "runner-up"

    @property
    def gap(self) -> float | None:
        if self.other is None or self.other.stat is None or self.best.stat is None:
            return None
        if self.best.stat.mean is None or self.other.stat.mean is None:
            return None
        return self.best.stat.mean - self.other.stat.mean

    @property
    def overlap(self) -> bool | None:
        """Whether the two 95% intervals overlap (None: an interval is missing)."""
        a, b = self.best.stat, self.other.stat if self.other else None
        if a is None or b is None or None in (a.low, a.high, b.low, b.high):
            return None
        return bool(a.low <= b.high and b.low <= a.high)  # type: ignore[operator]


def headline_strip(rows: list[Row]) -> list[Strip]:
    """Per section of the summary table, its :class:`Strip` (sections in table order)."""
    sections: dict[str, list[Row]] = {}
    for r in rows:
        if r.stat is not None and r.stat.mean is not None:
            sections.setdefault(r.section, []).append(r)
    out = []
    for section, items in sections.items():
        systems = sorted(
            (r for r in items if not r.is_floor and not r.is_oracle),
            key=lambda r: -(r.stat.mean or 0.0),  # type: ignore[union-attr]
        )
        floors = sorted(
            (r for r in items if r.is_floor),
            key=lambda r: -(r.stat.mean or 0.0),  # type: ignore[union-attr]
        )
        if not systems:
            continue
        if floors:
            out.append(Strip(section, systems[0], floors[0], "floor"))
        else:
            out.append(Strip(section, systems[0], systems[1] if len(systems) > 1 else None,
                             "runner-up"))  # fmt: skip
    return out


def _systems() -> Any:
    from chronobench.systems.registry import SYSTEMS

    return SYSTEMS


def _selectors() -> Any:
    from chronobench.selectors import SELECTORS

    return SELECTORS


def system_label(name: str) -> str:
    try:
        return _systems().label(name)
    except (KeyError, ValueError):
        return name


def ordered_selectors(names: Iterable[str]) -> list[str]:
    """Selector names in the leaderboard's order."""
    return _selectors().ordered(names)


def selector_label(name: str) -> str:
    try:
        return _selectors().label(name)
    except (KeyError, ValueError):
        return name


def is_floor(name: str) -> bool:
    """A registered floor (the system's ``floor`` flag)."""
    from chronobench.systems.registry import is_floor as registered_floor

    return registered_floor(name)


def is_oracle(name: str) -> bool:
    """A registered oracle (handed the gold target: an upper bound, not a contender)."""
    from chronobench.systems.registry import is_oracle as registered_oracle

    try:
        return registered_oracle(name)
    except (KeyError, ValueError):
        return False


def newest(runs: Iterable[ViewRun]) -> list[ViewRun]:
    """``runs`` oldest first, a local run after the published copy it replaces."""
    # Published runs are the board's; a local run of the same cell replaces its copy.
    return sorted(runs, key=lambda r: (r.where == "local", r.run_id))


def selection_sets(build: Build) -> dict[tuple[str, str], dict[str, Any]]:
    """``{(request set, granularity): {selector: its selection metrics}}``, from the runs
    with the most requests of each (a subset run never mixes with the full one)."""
    runs = [r for r in newest(build.runs) if r.kind in ("selection", "generation")]
    runs = [r for r in runs if r.metrics.get("selection")]
    most: dict[tuple[str, str], tuple[int, str]] = {}
    for r in runs:
        key, size = (r.queries, r.granularity), (r.n_queries or 0, r.data_build)
        most[key] = max(most.get(key, size), size)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in runs:
        key = (r.queries, r.granularity)
        if (r.n_queries or 0, r.data_build) == most[key]:
            out.setdefault(key, {}).update(r.metrics["selection"])
    return out


def generation_runs(build: Build) -> dict[str, ViewRun]:
    """The main request set's generation runs, one per system: session granularity and
    built requests when there are such runs, else the largest group there is."""
    runs = [r for r in build.runs if r.kind == "generation" and r.system]
    if not runs:
        return {}
    keys = {(r.granularity, r.queries, r.n_queries) for r in runs}
    best = max(keys, key=lambda k: (k[0] == "session", k[1] == "built", k[2] or 0, k[0], k[1]))
    picked = [r for r in runs if (r.granularity, r.queries, r.n_queries) == best]
    return {str(r.system): r for r in newest(picked)}


def ordered_systems(names: Iterable[str]) -> list[str]:
    """System names in the leaderboard's order (unknown names: by name)."""
    try:
        return _systems().ordered(names)
    except (KeyError, ValueError):
        return sorted(names)


def headline_rows(build: Build) -> list[Row]:
    """The summary table of one build (see the module): each registered track's lines,
    in the task registry's order."""
    from chronobench.runner.components import TASKS
    from chronobench.runner.task_kind import as_task_kind

    return [row for e in TASKS.entries() for row in as_task_kind(e.load()).view_rows(build)]


def track_plots(build: Build) -> list[str]:
    """The plots the registered tracks add to one build's section, in the registry's
    order (SVG markup)."""
    from chronobench.runner.components import TASKS
    from chronobench.runner.task_kind import as_task_kind

    return [svg for e in TASKS.entries() for svg in as_task_kind(e.load()).view_plots(build)]


def r1_by(build: Build, dim: str) -> tuple[list[str], list[tuple[str, list[float | None]]]]:
    """R@1 x100 per selector by ``dim`` (``intent``, or ``set``: the request sets) at
    session granularity (else the first there is): (series, rows)."""
    sets = selection_sets(build)
    if not sets:
        return [], []
    gran = "session" if any(g == "session" for _, g in sets) else sorted(sets)[0][1]
    if dim == "set":
        series = sorted({q for q, g in sets if g == gran}, key=lambda q: (q != "built", q))
        names = _selectors().ordered({s for q in series for s in sets[(q, gran)]})
        rows = []
        for s in names:
            vals = []
            for q in series:
                st = Stat.of(((sets[(q, gran)].get(s) or {}).get("all") or {}).get("recall_at_1"))
                vals.append(st.mean if st else None)
            rows.append((selector_label(s), vals))
        return [("templates" if q == "built" else q) for q in series], rows
    name = next((q for q in RQ1_SETS if (q, gran) in sets), sorted(sets)[0][0])
    sel = sets.get((name, gran)) or {}
    series = sorted({i for s in sel.values() for i in (s.get("by_intent") or {})})
    rows = []
    for s in _selectors().ordered(sel):
        by = sel[s].get("by_intent") or {}
        rows.append(
            (
                selector_label(s),
                [
                    (Stat.of((by.get(i) or {}).get("recall_at_1")) or Stat(None)).mean
                    for i in series
                ],
            )
        )
    return [f"{i} ({name})" for i in series], rows
