"""Metrics of chronobench, implementing ``docs/metrics.md``.

Per-sample score fields (stable names; the leaderboard reads them):

QA probes, ``kind="qa"`` (answerable at v*):
    ``qa_f1``        LoCoMo token F1 with category rules (max over gold answers); for
                     MAB probes the max plain token F1. Category 5 / no gold: 1 if the
                     prediction abstains.
    ``qa_em``        LoCoMo exact match (normalised token sets); LoCoMo probes only.
    ``substring_em`` MAB substring exact match against any gold; MAB probes only.
    ``qa_abstained`` 1 if the prediction abstains (false abstentions on answerable).
    ``qa_f1_answered`` ``qa_f1`` restricted to probes with a gold answer (not category
                     5): abstaining earns nothing there.
QA probes, ``kind="future_qa"`` (evidence after v*):
    ``future_abstain`` 1 if the prediction abstains (higher is better).
    ``future_leak``    1 if token F1 vs the post-v* gold >= 0.5 (lower is better);
                       only when the probe has ``future_answers``.
Both QA kinds:
    ``rc_qa``        headline rollback-consistent QA: ``qa_f1`` for answerable,
                     ``future_abstain`` for future probes; its mean is the headline.
Summary probes:
    ``rouge1``           ROUGE-1 F-measure (rouge-score, stemmer on), in [0, 1].
    ``summary_leakage``  fraction of post-v* events with ROUGE-1 recall >= 0.5.
Version selection (:func:`score_selection`):
    ``recall_at_1``, ``recall_at_k``, ``scope_at_k`` (|top1 - v*| <= floor(k/2);
    "Scope@2" for k = 5), ``mrr``.

:func:`aggregate` turns rows of these fields into ``{field: {n, mean, ci_low,
ci_high}}`` with a seeded 95% percentile bootstrap (1,000 resamples).
"""

from chronobench.metrics.bootstrap import summarise
from chronobench.metrics.qa import best_f1, leaked, locomo_em, locomo_f1, substring_em
from chronobench.metrics.score import aggregate, score_probe
from chronobench.metrics.selection import score_selection
from chronobench.metrics.summary import rouge1, summary_leakage
from chronobench.metrics.text import (
    ABSTAIN_PHRASES,
    ABSTAIN_TEXT,
    exact_match,
    is_abstention,
    normalize_answer,
    token_f1,
)

__all__ = [
    "ABSTAIN_PHRASES",
    "ABSTAIN_TEXT",
    "aggregate",
    "best_f1",
    "exact_match",
    "is_abstention",
    "leaked",
    "locomo_em",
    "locomo_f1",
    "normalize_answer",
    "rouge1",
    "score_probe",
    "score_selection",
    "substring_em",
    "summarise",
    "summary_leakage",
    "token_f1",
]
