"""Version-selection scores for RQ1: Recall@1, Recall@k, Scope@k/2 and MRR."""

from __future__ import annotations

from collections.abc import Sequence

from chronobench.metrics.catalog import declare_metric

__all__ = ["score_refusal", "score_selection"]


def _as_versions(ranked: Sequence[int | tuple[int, float]]) -> list[int]:
    # Selectors return (version, score) pairs; plain version lists are accepted too.
    out: list[int] = []
    for entry in ranked:
        version = entry[0] if isinstance(entry, tuple | list) else entry
        if isinstance(version, bool) or not isinstance(version, int):
            raise TypeError(
                f"ranked_versions: expected int versions or (version, score) pairs, got {entry!r}"
            )
        out.append(version)
    return out


# The fields score_selection writes (docs/metrics.md, RQ1). MRR is labelled MRR@depth in
# tables: the depth is the ranking the run recorded.
@declare_metric("recall_at_1", "selection", "R@1", order=10, main=True)
@declare_metric("recall_at_k", "selection", "R@k", order=20)
@declare_metric("scope_at_k", "selection", "Scope@k/2", order=30)
@declare_metric("mrr", "selection", "MRR", order=40)
def score_selection(
    ranked_versions: Sequence[int | tuple[int, float]], gold: int, k: int = 5
) -> dict[str, float]:
    """Score one query's ranked candidate versions against the gold ``v*``.

    Returns ``recall_at_1`` (top-1 == v*), ``recall_at_k`` (v* in the top k),
    ``scope_at_k`` (|top-1 - v*| <= floor(k/2); "Scope@2" when k = 5) and ``mrr``
    (1 / rank of the first occurrence of v*, 0 when absent). An empty ranking scores 0.
    """
    if k < 1:
        raise ValueError(f"score_selection: k must be >= 1, got {k}")
    versions = _as_versions(ranked_versions)
    if not versions:
        return {"recall_at_1": 0.0, "recall_at_k": 0.0, "scope_at_k": 0.0, "mrr": 0.0}
    top1 = versions[0]
    rank = versions.index(gold) + 1 if gold in versions else 0
    return {
        "recall_at_1": float(top1 == gold),
        "recall_at_k": float(0 < rank <= k),
        "scope_at_k": float(abs(top1 - gold) <= k // 2),
        "mrr": 1.0 / rank if rank else 0.0,
    }


def score_refusal(ranked_versions: Sequence[int | tuple[int, float]]) -> dict[str, float]:
    """Score a request that must be refused (it names nothing, or nothing in memory).

    A selector refuses by returning no candidate: every field of :func:`score_selection`
    is then 1, and any candidate (acting on the request) scores 0. A request a correct
    system acts on is scored by :func:`score_selection`, where refusing scores 0.
    """
    acted = bool(_as_versions(ranked_versions))
    value = 0.0 if acted else 1.0
    return {"recall_at_1": value, "recall_at_k": value, "scope_at_k": value, "mrr": value}
