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
        title="RQ2: rollback-consistent QA, RC-QA (headline: per query, harmonic mean of "
        "A* and B* on the known boundary probes: those a fixed reference reader answers at "
        "the last version)",
        short="RC-QA",
    ),
    MetricInfo("rc_qa_a", "rq2", "A*: keeps (session at v*)", short="A*"),
    MetricInfo("rc_qa_b", "rq2", "B*: forgets (first session after v*)", short="B*"),
    MetricInfo("rc_qa_a_zero", "rq2", "queries with A* = 0", higher_is_better=False),
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
    # Consistent forgetting alone is won by forgetting everything (version 1 scores
    # 99): it is shown only as B*, beside A* and the headline that joins them.
    MetricInfo("recall_acc", "rq2", "recall: right yes / no at v* (true and false, session at v*)"),
    MetricInfo("recall_forget", "rq2", "recall: abstains (first session after v*)"),
    MetricInfo("qa_abstained", "rq2", "abstains on answerable", higher_is_better=False),
    # The system's own final-session answers (protocol 3): reported, choose nothing.
    MetricInfo("final_correct", "rq2", "right at the last version (its own final session)"),
    MetricInfo(
        "session_coverage",
        "rq3",
        "session coverage (headline)",
        main=True,
        title="RQ3: rollback-consistent summarisation, session coverage (headline: each "
        "restored session's new words said in the first 150 words; 0 when it leaks)",
        short="SesCov",
    ),
    MetricInfo(
        "rouge1",
        "rq3",
        "ROUGE-1",
        title="RQ3: ROUGE-1 of the first 150 words (rewards any text sharing the "
        "reference's words: read with the floors)",
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
