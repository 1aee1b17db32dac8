"""The ``metric`` kind of the one registry (:data:`METRICS`): every reported metric, its
scorer and how tables present it, so the leaderboard, the run summary and
:func:`~chronobench.metrics.score_probe` read it from one place.

Each metric is declared beside its scorer with :func:`declare_metric`, a decorator on
the scorer (as lm-eval's ``register_metric(higher_is_better=...)``); an installed
package adds one through the entry-point group ``chronobench.metrics``
(docs/plugins.md), whose value is a :func:`metric_plugin`.

An entry's target is its scorer; its ``label``, ``order`` and ``meta`` hold the rest
(:class:`MetricInfo` is the typed view). ``section`` groups metrics into tables
(``selection``: RQ1, ``rq2``: rollback-consistent QA, ``rq3``: rollback-consistent
summarisation), in the order listed; within a section, columns follow ``order`` (none:
after the ordered ones, by name). ``main`` marks a section's main score (its counts and
its by-intent / by-source breakdowns are the main score's); ``higher_is_better`` says
which way is good; ``title`` (when set) gives the metric its own table with one column
per backbone; ``short`` (when set) puts it in the one-screen summary printed after a run.

:data:`PROBE_KINDS` is the table :func:`~chronobench.metrics.score_probe` looks a probe up
in: probe kind -> the scorer of its built-in fields (:func:`probe_scorer`). A plug-in
metric names the probe kinds its own scorer scores (``probes``); its field is added to
theirs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from chronobench.errors import ConfigError
from chronobench.plugins import GROUPS, Plugin
from chronobench.registry import Entry, Registry

__all__ = [
    "METRICS",
    "PROBE_KINDS",
    "SECTIONS",
    "MetricInfo",
    "declare_metric",
    "main_metric",
    "metric",
    "metric_plugin",
    "metrics",
    "plugin_scorers",
    "probe_scorer",
    "section",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Table sections, in table order.
SECTIONS = ("selection", "rq2", "rq3")

#: Metric name (its field in ``metrics.json``) -> its scorer, label, order and meta.
METRICS = Registry(
    "metric",
    entry_points=GROUPS["metric"],
    hint="declare one with @declare_metric(...) on its scorer (chronobench.metrics.catalog)",
)

#: Probe kind (``qa``, ``future_qa``, ``final_qa``, ``summary``; ``recall/<kind>`` for
#: recall probes) -> ``f(probe, prediction) -> {field: score}``.
PROBE_KINDS = Registry("probe kind", hint="declare its scorer with @probe_scorer(kind)")


@dataclass(frozen=True)
class MetricInfo:
    """One metric field of ``metrics.json`` and how tables present it (read from its
    :data:`METRICS` entry)."""

    name: str
    section: str
    label: str
    higher_is_better: bool = True
    main: bool = False
    title: str | None = None
    short: str | None = None
    scorer: Any = None  # the function that writes the field (or its "module:attr")
    probes: tuple[str, ...] = ()  # a plug-in's: the probe kinds its scorer scores

    @classmethod
    def of(cls, entry: Entry) -> MetricInfo:
        """The typed view of a metric entry; a clear error for a plug-in's bad one."""
        meta = dict(entry.meta)
        section = meta.pop("section", None)
        if section not in SECTIONS or entry.label is None:
            raise ConfigError(
                f"metric {entry.name!r} ({entry.describe()}): needs a label and a section, one "
                f"of {SECTIONS}, got {entry.label!r} and {section!r}; declare it with "
                "chronobench.metrics.catalog.metric_plugin (docs/plugins.md)"
            )
        try:
            return cls(entry.name, section, entry.label, scorer=entry.target, **meta)
        except TypeError:
            raise ConfigError(
                f"metric {entry.name!r} ({entry.describe()}): unknown meta {sorted(meta)}; "
                "declare it with chronobench.metrics.catalog.metric_plugin (docs/plugins.md)"
            ) from None


def _meta(section: str, **fields: Any) -> dict[str, Any]:
    if section not in SECTIONS:
        raise ValueError(f"metric section {section!r} is not one of {SECTIONS}")
    return {"section": section, **fields}


def declare_metric(
    name: str,
    section: str,
    label: str,
    *,
    order: float | None = None,
    higher_is_better: bool = True,
    main: bool = False,
    title: str | None = None,
    short: str | None = None,
) -> Callable[[F], F]:
    """Decorate the scorer that writes the metric field ``name``: registers it in
    :data:`METRICS` with how tables present it (a module imported twice registers the
    same entry again, which is no collision)."""
    meta = _meta(section, higher_is_better=higher_is_better, main=main, title=title, short=short)
    return METRICS.register(name, label=label, order=order, meta=meta)  # type: ignore[no-any-return]


def metric_plugin(
    scorer: str | Callable[..., Any],
    section: str,
    label: str,
    *,
    probes: tuple[str, ...],
    order: float | None = None,
    higher_is_better: bool = True,
    main: bool = False,
    title: str | None = None,
    short: str | None = None,
) -> Plugin:
    """What an entry point in ``chronobench.metrics`` names: the metric's scorer
    (``f(probe, prediction) -> {field: score}``, or its ``"module:attr"``), the probe
    kinds it scores (keys of :data:`PROBE_KINDS`) and how tables present it."""
    meta = _meta(
        section,
        higher_is_better=higher_is_better,
        main=main,
        title=title,
        short=short,
        probes=tuple(probes),
    )
    return Plugin(target=scorer, label=label, order=order, meta=meta)


def probe_scorer(kind: str) -> Callable[[F], F]:
    """Decorate ``f(probe, prediction) -> {field: score}``: the scorer of probe ``kind``
    in :data:`PROBE_KINDS`."""
    return PROBE_KINDS.register(kind)  # type: ignore[no-any-return]


def plugin_scorers(kind: str) -> list[Callable[..., Any]]:
    """The scorers installed metric plug-ins declare for probe ``kind`` (none built in)."""
    return [e.load() for e in METRICS.entries() if kind in e.meta.get("probes", ())]


def metrics() -> tuple[MetricInfo, ...]:
    """Every metric, in table order: by section, then by order, then by name."""
    # The built-ins are declared: importing this module ran chronobench/metrics/__init__,
    # which imports every scorer module.
    infos = [(MetricInfo.of(e), e) for e in METRICS.entries()]
    infos.sort(key=lambda pair: (SECTIONS.index(pair[0].section), pair[1].sort_key()))
    return tuple(info for info, _ in infos)


def metric(name: str) -> MetricInfo:
    """The metadata of metric ``name``."""
    return {m.name: m for m in metrics()}[name]


def section(name: str) -> list[MetricInfo]:
    """The metrics of one table section, in table order."""
    return [m for m in metrics() if m.section == name]


def main_metric(name: str) -> MetricInfo:
    """The main score of one table section."""
    return next(m for m in metrics() if m.section == name and m.main)
