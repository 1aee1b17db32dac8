"""What each reported metric is, for the tables that show it: one :class:`MetricInfo`
per metric, so the leaderboard and the run summary read their columns from here.

Each metric is declared beside its scorer with :func:`declare_metric` (as lm-eval's
``register_metric(higher_is_better=...)``): selection metrics in
:mod:`chronobench.metrics.selection`, the query-level headline in
:mod:`chronobench.metrics.runlevel`, per-probe metrics in :mod:`chronobench.metrics.score`.
:func:`metrics` loads those modules, in that order, and lists the declarations in the
order made within each section and scorer: that order is the tables' column order.

``section`` groups metrics into tables (``selection``: RQ1, ``rq2``: rollback-consistent
QA, ``rq3``: rollback-consistent summarisation), in the order listed. ``main`` marks a
section's main score (its counts and its by-intent / by-source breakdowns are the main
score's); ``higher_is_better`` says which way is good; ``title`` (when set) gives the metric its own table with one column per
backbone; ``short`` (when set) puts it in the one-screen summary printed after a run.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass

__all__ = [
    "SECTIONS",
    "MetricInfo",
    "declare_metric",
    "main_metric",
    "metric",
    "metrics",
    "section",
]


@dataclass(frozen=True)
class MetricInfo:
    """One metric field of ``metrics.json`` and how tables present it."""

    name: str
    section: str
    label: str
    higher_is_better: bool = True
    main: bool = False
    title: str | None = None
    short: str | None = None
    scorer: str = ""  # the module that declared it (and writes the field)


_DECLARED: dict[str, MetricInfo] = {}
#: Table sections, in table order.
SECTIONS = ("selection", "rq2", "rq3")
# The scorer modules that declare metrics, in table order within a section.
_SCORERS = (
    "chronobench.metrics.selection",
    "chronobench.metrics.runlevel",
    "chronobench.metrics.score",
)


def declare_metric(
    name: str,
    section: str,
    label: str,
    *,
    higher_is_better: bool = True,
    main: bool = False,
    title: str | None = None,
    short: str | None = None,
) -> MetricInfo:
    """Declare the metric field ``name`` its scorer writes, with how tables present it.

    A second declaration of one name must be the same one (a module imported twice)."""
    if section not in SECTIONS:
        raise ValueError(f"metric {name!r}: section {section!r} is not one of {SECTIONS}")
    scorer = str(sys._getframe(1).f_globals.get("__name__", ""))
    info = MetricInfo(name, section, label, higher_is_better, main, title, short, scorer)
    prev = _DECLARED.setdefault(name, info)
    if prev != info:
        raise ValueError(f"metric {name!r} declared twice, differently: {prev} and {info}")
    return info


def metrics() -> tuple[MetricInfo, ...]:
    """Every declared metric, in table order: by section, then by scorer module, then
    as declared (so the order does not hang on which module was imported first)."""
    for module in _SCORERS:
        importlib.import_module(module)
    seq = {name: i for i, name in enumerate(_DECLARED)}

    def key(m: MetricInfo) -> tuple[int, int, int]:
        rank = _SCORERS.index(m.scorer) if m.scorer in _SCORERS else len(_SCORERS)
        return (SECTIONS.index(m.section), rank, seq[m.name])

    return tuple(sorted(_DECLARED.values(), key=key))


def metric(name: str) -> MetricInfo:
    """The metadata of metric ``name``."""
    return {m.name: m for m in metrics()}[name]


def section(name: str) -> list[MetricInfo]:
    """The metrics of one table section, in table order."""
    return [m for m in metrics() if m.section == name]


def main_metric(name: str) -> MetricInfo:
    """The main score of one table section."""
    return next(m for m in metrics() if m.section == name and m.main)
