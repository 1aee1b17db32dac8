"""RQ4's per-anchor headline (docs/metrics.md "RQ4"): forget, keep, turn precision, recall.

A selective forget has three ways to go wrong, and the headline charges each:

- **forget** (1 - leakage): the share of the anchor's forget questions (their evidence in
  the required set) that the reader can no longer answer;
- **keep**: the share of every other scored question (evidence outside the required set:
  keep after and keep other) it still answers, so collateral damage anywhere costs;
- **precision**: the share of the removed turns that lie in the required set, so every
  turn removed outside it costs, whether or not a question happens to cite it (0 when
  nothing was removed);
- **recall**: the share of the required set removed, so every turn that says the fact
  and is left costs, whether or not a question happens to test it.

The headline is their harmonic mean. Doing nothing has forget 0 and scores 0; deleting
everything has keep and precision near 0 and scores near 0; the oracle (exactly the
required set) has precision and recall 1 and keep at its ceiling. One extra turn removed
with a required set of g turns lowers precision from 1 to g / (g + 1), one required turn
left lowers recall to (g - 1) / g: every wrong removal and every missed one costs. A
policy cannot buy forget with extra deletions on one anchor and win it back on another:
the mean is over anchors, each scored on its own, and within an anchor the harmonic mean
is at most the smallest of its parts times four.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["forget_headline", "turn_precision", "turn_recall"]


def turn_precision(removed: Collection[int], required: Collection[int]) -> float:
    """Share of ``removed`` in ``required`` (0 when nothing was removed)."""
    if not removed:
        return 0.0
    return len(set(removed) & set(required)) / len(removed)


def turn_recall(removed: Collection[int], required: Collection[int]) -> float:
    """Share of ``required`` that was removed."""
    return len(set(removed) & set(required)) / len(required) if required else 0.0


def forget_headline(
    forget: float, keep: float | None, precision: float, recall: float
) -> float | None:
    """The harmonic mean of forget, keep, precision and recall (None without a keep
    question; 0 when any of them is 0)."""
    if keep is None:
        return None
    parts = (forget, keep, precision, recall)
    if min(parts) <= 0:
        return 0.0
    return len(parts) / sum(1.0 / x for x in parts)
