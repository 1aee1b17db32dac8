"""The RQ4 cell's ``metrics.json`` block (:mod:`chronobench.tracks.selective.run`): per request
source the mean and 95% cluster-bootstrap interval of every per-anchor score, a peer's
``delete_hits`` sweep reduced to its best k, and how the anchors' required sets grew.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["METRICS", "required_counts", "sweep_metrics"]

METRICS = (
    "headline", "forget", "leakage", "keep", "keep_after", "keep_other", "precision", "recall",
)  # fmt: skip


def required_counts(bench: list[Any]) -> dict[str, Any]:
    """How the required sets grew from the anchors' own turns: anchors, own turns, extra
    turns per route, anchors that grew, forget questions matched to a fact elsewhere, and
    forget questions left out because their fact survives outside the required set."""
    routes: Counter[str] = Counter()
    out = {"anchors": 0, "own_turns": 0, "grown": 0, "same_fact": 0, "survives": 0}
    for fs in bench:
        for a in fs.anchors:
            out["anchors"] += 1
            out["own_turns"] += len(a.own)
            out["grown"] += int(len(a.gold) > len(a.own))
            out["same_fact"] += len(a.same_fact)
            out["survives"] += len(a.survives)
            routes.update({k: v for k, v in a.extra_by_route if v})
    return {**out, "extra_turns": dict(sorted(routes.items()))}


def sweep_metrics(
    rows: list[dict[str, Any]],
    dropped: Counter[str],
    seed: int,
    summarise: Any,
    sweep: tuple[int, ...] = (),
) -> dict[str, Any]:
    """The cell's ``rq4`` block; for a sweep, the best k's blocks (by held-out headline)
    with every k's headline under ``sweep``."""
    if not sweep:
        return _metrics(rows, dropped, seed, summarise)
    per = {k: _metrics([r for r in rows if r["delete_hits"] == k], dropped, seed, summarise)
           for k in sweep}  # fmt: skip
    best = max(sweep, key=lambda k: (per[k]["rq4"]["user"]["headline"]["mean"] or 0.0, -k))
    out = per[best]
    out["rq4"]["delete_hits"] = best
    out["rq4"]["sweep"] = {
        str(k): {src: per[k]["rq4"][src]["headline"] for src in ("user", "template", "all")}
        for k in sweep
    }
    return out


def _metrics(
    rows: list[dict[str, Any]], dropped: Counter[str], seed: int, summarise: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"rq4": {"dropped": dict(sorted(dropped.items()))}}
    for source in ("user", "template", "all"):
        mine = [r for r in rows if source == "all" or r["source"] == source]
        block: dict[str, Any] = {"anchors": len(mine)}
        for m in METRICS:
            vals = [(r[m], r["stream"]) for r in mine if r[m] is not None]
            block[m] = summarise([v for v, _ in vals], seed, clusters=[c for _, c in vals])
        block["no_keep"] = sum(1 for r in mine if r["keep"] is None)
        out["rq4"][source] = block
    return out
