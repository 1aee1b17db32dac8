"""What each reported metric is, for the tables that show it: one :class:`MetricInfo`
per metric, so the leaderboard and the run summary read their columns from here.

``section`` groups metrics into tables (``selection``: RQ1, ``rq2``: rollback-consistent
QA, ``rq3``: rollback-consistent summarisation), in the order listed. ``main`` marks a
section's main score (its counts and its by-intent / by-source breakdowns are the main
score's); ``higher_is_better`` says which way is good; ``title`` (when set) gives the metric its own table with one column per
backbone; ``short`` (when set) puts it in the one-screen summary printed after a run.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["METRICS", "MetricInfo", "main_metric", "metric", "section"]


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


METRICS: tuple[MetricInfo, ...] = (
    MetricInfo("recall_at_1", "selection", "R@1", main=True),
    MetricInfo("recall_at_k", "selection", "R@k"),
    MetricInfo("scope_at_k", "selection", "Scope@k/2"),
    # Labelled MRR@depth in tables: the depth is the ranking the run recorded.
    MetricInfo("mrr", "selection", "MRR"),
    MetricInfo(
        "rc_qa",
        "rq2",
        "RC-QA (headline)",
        main=True,
        title="RQ2: rollback-consistent QA, RC-QA (headline, harmonic mean of A and B per query)",
        short="RC-QA",
    ),
    MetricInfo(
        "qa_f1",
        "rq2",
        "A: answerable F1 (cat 1-4)",
        title="RQ2: A, answerable F1, LoCoMo category rules, categories 1-4",
        short="A:F1",
    ),
    MetricInfo(
        "future_abstain",
        "rq2",
        "B: future abstention",
        title="RQ2: B, abstention on future-evidence probes",
        short="B:Abst",
    ),
    MetricInfo(
        "future_leak",
        "rq2",
        "leakage (lower is better)",
        higher_is_better=False,
        title="RQ2: leakage on future-evidence probes (lower is better)",
        short="Leak",
    ),
    MetricInfo(
        "adversarial_acc",
        "rq2",
        "adversarial acc. (cat 5)",
        title="RQ2: adversarial accuracy (category 5, two-way choice; not in RC-QA)",
        short="Adv",
    ),
    MetricInfo("consistent_forgetting", "rq2", "consistent forgetting", short="ConsF"),
    MetricInfo("qa_abstained", "rq2", "abstains on answerable", higher_is_better=False),
    MetricInfo(
        "rouge1",
        "rq3",
        "ROUGE-1",
        main=True,
        title="RQ3: rollback-consistent summarisation, ROUGE-1",
        short="R-1",
    ),
    MetricInfo(
        "content_rouge1",
        "rq3",
        "content ROUGE-1",
        title="RQ3: content ROUGE-1 (no stopwords, names, dates, numbers)",
        short="cR-1",
    ),
    MetricInfo(
        "specific_rouge1",
        "rq3",
        "specific content ROUGE-1",
        title="RQ3: specific content ROUGE-1 (also no words common to most conversations' "
        "summaries)",
        short="sR-1",
    ),
    MetricInfo(
        "summary_leakage",
        "rq3",
        "calibrated leakage (lower is better)",
        higher_is_better=False,
        title="RQ3: calibrated summary leakage (lower is better)",
        short="SumLeak",
    ),
)

_BY_NAME = {m.name: m for m in METRICS}


def metric(name: str) -> MetricInfo:
    """The metadata of metric ``name``."""
    return _BY_NAME[name]


def section(name: str) -> list[MetricInfo]:
    """The metrics of one table section, in table order."""
    return [m for m in METRICS if m.section == name]


def main_metric(name: str) -> MetricInfo:
    """The main score of one table section."""
    return next(m for m in METRICS if m.section == name and m.main)
