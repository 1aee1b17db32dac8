"""The typed ``metrics.json``: :class:`Stat`, :class:`Breakdown`, :class:`RunMetrics` and
:class:`MetricsFile`.

:func:`~chronobench.runner.metrics_io.compute_metrics` returns a :class:`RunMetrics`; the
run folder writes it and the leaderboard reads it back through :class:`MetricsFile`. The
models read every published file as it is: a section a run did not compute is left unset
and is not written back (:meth:`RunMetrics.to_json` dumps only what was set), so the bytes
of a file are the same after a read and a write. The benchmark sections (``selection``,
``probes``) are typed down to each statistic; the sections of the other task kinds
(``peer``, ``rq4``, the repair task's groups) are typed at the top and hold their own
plain blocks.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from chronobench.results.version import RESULTS_SCHEMA_VERSION, SchemaVersion

__all__ = ["Breakdown", "MetricsFile", "RunMetrics", "Stat", "Stats", "figure_text"]


def figure_text(mean: float | None, low: float | None = None, high: float | None = None) -> str:
    """A figure as the board and the viewer print it: ``mean [low, high]`` to one decimal,
    the mean alone without both bounds, a dash without a mean. The values are printed as
    given (the callers scale fractions x100)."""
    if mean is None:
        return "–"
    if low is None or high is None:
        return f"{mean:.1f}"
    return f"{mean:.1f} [{low:.1f}, {high:.1f}]"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_json(self) -> dict[str, Any]:
        """The JSON object of what was set (a field absent from the file stays absent)."""
        return self.model_dump(mode="json", exclude_unset=True)


class Stat(_Model):
    """One metric over a group of units: its mean and 95% cluster-bootstrap interval
    (:func:`~chronobench.metrics.bootstrap.summarise`); ``None`` where ``n`` is 0.
    Files of results schema 1.0 carry no ``n_distinct`` / ``n_clusters``."""

    n: int
    n_distinct: int | None = None
    n_clusters: int | None = None
    mean: float | None
    ci_low: float | None
    ci_high: float | None

    def text(self, scale: float = 100.0, ci: bool = True) -> str:
        """The statistic x``scale`` as printed (:func:`figure_text`); ``ci``: with its
        interval."""

        def s(x: float | None) -> float | None:
            return None if x is None else x * scale

        if not ci:
            return figure_text(s(self.mean))
        return figure_text(s(self.mean), s(self.ci_low), s(self.ci_high))


#: Metric name -> its statistic, for one group.
Stats = dict[str, Stat]


class Breakdown(_Model):
    """A section's statistics: over every unit (``all``), per request intent and query
    source, and for probes per LoCoMo category and the system's own version choice
    (``restored``); a selector's section also records its ranking depth (MRR@depth)."""

    all: Stats
    by_intent: dict[str, Stats] = {}
    by_source: dict[str, Stats] = {}
    by_category: dict[str, Stats] | None = None
    restored: Stats | None = None
    mrr_depth: int | None = None

    def groups(self) -> list[tuple[str, dict[str, Stats]]]:
        """The ``by_*`` breakdowns that were set, by name: ``("intent", {...})``, ..."""
        names = ("by_category", "by_intent", "by_source")
        return [
            (name[3:], getattr(self, name))
            for name in names
            if name in self.model_fields_set and getattr(self, name) is not None
        ]

    def merged(self, later: Breakdown) -> Breakdown:
        """This section with a later run's over it: ``all`` joins both runs' metrics (a
        qa run and a summary run of one cell fill different ones), every other part set
        in ``later`` replaces this one's."""
        update: dict[str, Any] = {
            name: getattr(later, name) for name in later.model_fields_set if name != "all"
        }
        update["all"] = {**self.all, **later.all}
        out = self.model_copy(update=update)
        # model_copy keeps the fields-set of ``self``: add what ``later`` set.
        out.__pydantic_fields_set__ = self.model_fields_set | later.model_fields_set
        return out


class RunMetrics(_Model):
    """The ``metrics`` object of ``metrics.json``.

    Benchmark runs: ``selection`` (per selector) and ``probes``; ``errors`` counts
    records that failed (absent when none); ``parse_failures`` (language-model replies). Peers runs add ``peer``, RQ4 runs hold only
    ``rq4``; repair runs hold ``all`` and their ``by_*`` groups and ``per_case``.
    """

    selection: dict[str, Breakdown] = {}
    probes: Breakdown | None = None
    errors: int | None = None
    peer: dict[str, Any] | None = None
    rq4: dict[str, Any] | None = None
    # A language model's replies not read as asked, by kind (chronobench/metrics/replies.py).
    parse_failures: dict[str, int] | None = None
    # The repair task's own aggregate (chronobench/tracks/repair/metrics.py): every metric over
    # all cases and per group, and the per-case values of the main ones.
    all: Stats | None = None
    by_diagnosis: dict[str, Stats] | None = None
    by_domain: dict[str, Stats] | None = None
    by_family: dict[str, Stats] | None = None
    by_fault_type: dict[str, Stats] | None = None
    per_case: dict[str, list[Any]] | None = None
    # Repair cases with nothing to repair (no fault reached memory): {"n", "case_id"}.
    not_applicable: dict[str, Any] | None = None
    # A plug-in track's own figures (its board and viewer sections read them).
    track: dict[str, Any] | None = None


class MetricsFile(_Model):
    """``metrics.json``: the results schema version, the run, its ``k`` and its metrics."""

    schema_version: SchemaVersion = RESULTS_SCHEMA_VERSION
    run_id: str
    k: int
    metrics: RunMetrics

    @classmethod
    def of(cls, run_id: str, k: int, metrics: RunMetrics | dict[str, Any]) -> MetricsFile:
        """The file of a run's metrics (a plain dict is validated into :class:`RunMetrics`)."""
        if not isinstance(metrics, RunMetrics):
            metrics = RunMetrics.model_validate(metrics)
        return cls(schema_version=RESULTS_SCHEMA_VERSION, run_id=run_id, k=k, metrics=metrics)
