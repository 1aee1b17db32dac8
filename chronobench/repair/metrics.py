"""Scores of one repaired case, and their aggregation (docs/repair.md defines them).

Per case: ``recovery`` (final answer equals the fault-free run's), ``faulty_removal``
(share of diagnosed fault records no longer in S(HEAD)), ``benign_preservation`` (share
of the gold store's records still in S(HEAD) with the same text), ``replay_ratio``
(executed task steps / task steps), ``backbone_calls`` (replay plus judging),
``recurrence`` (a fault-derived value survives: a repaired claim equal to its wrong
failed value, or an active record holding a fault's wrong (slot, value) or the failed
answer), ``claim_f1`` (invalidated claims vs the claims whose failed value differs from
the gold one). Aggregates are means with 95% bootstrap CIs that resample cases (one row
per case, so cases are the clusters).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from chronobench.metrics.bootstrap import summarise
from chronobench.repair.domains import parse_record

METRICS = (
    "recovery",
    "faulty_removal",
    "benign_preservation",
    "replay_ratio",
    "backbone_calls",
    "recurrence",
    "claim_f1",
)


def claim_f1(predicted: set[str], gold: set[str]) -> float:
    """F1 of the invalidated claim keys against the truly changed ones (1.0 when both are empty)."""
    if not predicted and not gold:
        return 1.0
    tp = len(predicted & gold)
    return 2 * tp / (len(predicted) + len(gold))


def wrong_pairs(case: dict[str, Any]) -> set[tuple[str, str]]:
    """(slot, value) pairs a fault put in memory that differ from the gold run's value,
    plus the failed answer as a ``last_choice`` note."""
    gold = case["gold"]["claims"]
    out = {("last_choice", case["failed"]["answer"])}
    for f in case["faults"]:
        for slot, value in case["records"][f["record"]]["pairs"]:
            if slot in gold and gold[slot] != value:
                out.add((slot, value))
    return out


def score_case(
    case: dict[str, Any], trace: Any, store: dict[str, str], invalidated: list[str], calls: int
) -> dict[str, float]:
    """Every per-case metric of one repaired case."""
    failed, gold = case["failed"]["claims"], case["gold"]["claims"]
    changed = {k for k in failed if failed[k] != gold.get(k)}
    held = set(store.values())
    faults = [case["records"][rid]["text"] for rid in case["diagnosed"]]
    gold_store = case["gold"]["store"]
    bad = wrong_pairs(case)
    survives = any(trace.claims.get(k) == failed[k] for k in changed)
    for text in held:
        parsed = parse_record(text)
        if parsed and any(tuple(p) in bad for p in parsed[1]):
            survives = True
    executed = sum(1 for s in trace.steps if s["executed"])
    return {
        "recovery": float(trace.answer == case["gold"]["answer"]),
        "faulty_removal": sum(t not in held for t in faults) / len(faults) if faults else 1.0,
        "benign_preservation": (
            sum(store.get(i) == t for i, t in gold_store.items()) / len(gold_store)
            if gold_store
            else 1.0
        ),
        "replay_ratio": executed / len(trace.steps),
        "backbone_calls": float(calls),
        "recurrence": float(survives),
        "claim_f1": claim_f1(set(invalidated), changed),
    }


def aggregate(rows: list[dict[str, Any]], seed: int = 0) -> dict[str, Any]:
    """Mean and CI of every metric overall, by domain and by fault type (a multi-fault
    case counts once under each of its fault types)."""

    def block(rs: list[dict[str, Any]]) -> dict[str, Any]:
        return {m: summarise([r["scores"][m] for r in rs], seed=seed) for m in METRICS}

    by_domain: dict[str, list] = defaultdict(list)
    by_fault: dict[str, list] = defaultdict(list)
    for r in rows:
        by_domain[r["domain"]].append(r)
        for ft in r["fault_types"]:
            by_fault[ft].append(r)
    return {
        "all": block(rows),
        "by_domain": {k: block(v) for k, v in sorted(by_domain.items())},
        "by_fault_type": {k: block(v) for k, v in sorted(by_fault.items())},
    }
