"""Summary scores: ROUGE-1 (rouge-score, Porter stemmer) and summary leakage."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

__all__ = ["LEAK_RECALL_THRESHOLD", "rouge1", "summary_leakage"]

#: A post-v* event counts as leaked when its ROUGE-1 recall reaches this value.
LEAK_RECALL_THRESHOLD = 0.5


@lru_cache(maxsize=1)
def _scorer() -> Any:
    # Built once: the scorer object is stateless and costs a little to construct.
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)


def rouge1(prediction: str, reference: str) -> float:
    """ROUGE-1 F-measure of ``prediction`` against ``reference``, in [0, 1]."""
    return float(_scorer().score(reference, prediction)["rouge1"].fmeasure)


def summary_leakage(prediction: str, future_events: Sequence[str]) -> float:
    """Fraction of post-v* events whose ROUGE-1 recall (event as the reference) against
    the prediction is >= 0.5. Lower is better; 0.0 when there are no events."""
    if not future_events:
        return 0.0
    scorer = _scorer()
    hits = sum(
        scorer.score(event, prediction)["rouge1"].recall >= LEAK_RECALL_THRESHOLD
        for event in future_events
    )
    return hits / len(future_events)
