"""QA scores: LoCoMo category rules, MemoryAgentBench substring match, leakage."""

from __future__ import annotations

from collections.abc import Sequence

from chronobench.metrics.text import exact_match, is_abstention, normalize_answer, token_f1

__all__ = [
    "LEAK_F1_THRESHOLD",
    "best_f1",
    "leaked",
    "locomo_em",
    "locomo_f1",
    "substring_em",
]

#: A future-evidence answer counts as leaked when its token F1 reaches this value.
LEAK_F1_THRESHOLD = 0.5


def _multi_hop_f1(prediction: str, gold: str) -> float:
    # Category 1: every comma-separated gold part is matched by its best predicted part.
    preds = [p.strip() for p in prediction.split(",")]
    parts = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in parts) / len(parts)


def locomo_f1(prediction: str, gold: str, category: int | None) -> float:
    """Score one prediction against one gold answer with LoCoMo's category rules.

    Category 1: comma-split multi-hop F1; 2, 4 and unknown: token F1; 3: F1 against the
    gold text before the first ';'; 5: 1.0 if the prediction abstains, else 0.0.
    """
    if category == 5:
        return float(is_abstention(prediction))
    if category == 1:
        return _multi_hop_f1(prediction, gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    return token_f1(prediction, gold)


def locomo_em(prediction: str, gold: str, category: int | None) -> float:
    """Exact match (normalised token sets); category 5 uses the abstention rule."""
    if category == 5:
        return float(is_abstention(prediction))
    if category == 3:
        gold = gold.split(";")[0].strip()
    return exact_match(prediction, gold)


def best_f1(prediction: str, golds: Sequence[str]) -> float:
    """Max plain token F1 of ``prediction`` over ``golds`` (0.0 when there are none)."""
    return max((token_f1(prediction, g) for g in golds), default=0.0)


def substring_em(prediction: str, golds: Sequence[str]) -> float:
    """MemoryAgentBench: 1.0 if any normalised gold is a substring of the normalised
    prediction. Empty golds never match (an empty string is in everything)."""
    pred = normalize_answer(prediction)
    for gold in golds:
        norm = normalize_answer(gold)
        if norm and norm in pred:
            return 1.0
    return 0.0


def leaked(prediction: str, future_golds: Sequence[str]) -> float:
    """1.0 when the prediction matches a post-v* gold answer (token F1 >= 0.5)."""
    return float(best_f1(prediction, future_golds) >= LEAK_F1_THRESHOLD)
