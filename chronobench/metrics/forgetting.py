"""RQ4's per-anchor headline (docs/metrics.md "RQ4"): forget, keep and turn precision.

A selective forget has three ways to go wrong, and the headline charges each:

- **forget** (1 - leakage): the share of the anchor's forget questions (their evidence in
  the required set) that the reader can no longer answer;
- **keep**: the share of every other scored question (evidence outside the required set:
  keep after and keep other) it still answers, so collateral damage anywhere costs;
- **precision**: the share of the removed turns that lie in the required set, so every
  turn removed outside it costs, whether or not a question happens to cite it (0 when
  nothing was removed).

The headline is their harmonic mean. Doing nothing has forget 0 and scores 0; deleting
everything has keep and precision near 0 and scores near 0; the oracle (exactly the
required set) has precision 1 and keep at its ceiling. One extra turn removed with a
required set of g turns lowers precision from 1 to g / (g + 1), so every wrong removal
costs, and a policy cannot buy forget with extra deletions on one anchor and win it back
on another: the mean is over anchors, each scored on its own.
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


def forget_headline(forget: float, keep: float | None, precision: float) -> float | None:
    """The harmonic mean of forget, keep and precision (None without a keep question;
    0 when any of the three is 0)."""
    if keep is None:
        return None
    parts = (forget, keep, precision)
    if min(parts) <= 0:
        return 0.0
    return len(parts) / sum(1.0 / x for x in parts)
