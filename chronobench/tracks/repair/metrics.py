"""Scores of one repaired case, provenance quality, and their aggregation
(docs/repair.md defines them).

Per case: ``recovery`` (final answer equals the fault-free run's), ``faulty_removal``
(share of diagnosed fault records no longer in S(HEAD)), ``benign_preservation`` (share
of the gold store's records still in S(HEAD) with the same text), ``replay_ratio``
(steps executed by the repair, history and task, / steps of the failed run),
``backbone_calls`` (replay plus judging), ``recurrence`` (a fault-derived value
survives), ``claim_f1`` (the task claims the repair recomputed vs the claims whose
failed value differs from the gold one), and the recorded provenance's edge precision / recall
against the generator's gold dependencies (``prov_*`` from the backbone's citations,
``prompt_*`` from prompt contents alone). Aggregates are means with 95% bootstrap CIs
that resample cases (one row per case, so cases are the clusters). A case whose fault
never reached memory (``not_applicable``: the agent stored nothing from any fault
session) has nothing to repair: it is left out of every aggregate and counted apart.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from chronobench.metrics.bootstrap import summarise
from chronobench.tracks.repair.lexicon import read_pairs

METRICS = (
    "recovery",
    "faulty_removal",
    "benign_preservation",
    "replay_ratio",
    "backbone_calls",
    "recurrence",
    "claim_f1",
    "prov_precision",
    "prov_recall",
    "prompt_precision",
    "prompt_recall",
    "det_tp",
    "det_fp",
    "det_fn",
    "detector_calls",
)
PAIRED = ("recovery", "benign_preservation", "replay_ratio", "backbone_calls", "recurrence",
          "det_tp", "det_fp", "det_fn")  # fmt: skip


def claim_f1(predicted: set[str], gold: set[str]) -> float:
    """F1 of the invalidated claim keys against the truly changed ones (1.0 when both are empty)."""
    if not predicted and not gold:
        return 1.0
    tp = len(predicted & gold)
    return 2 * tp / (len(predicted) + len(gold))


def edge_scores(recorded: set[tuple[str, str]], gold: set[tuple[str, str]]) -> tuple[float, float]:
    """(precision, recall) of recorded dependency edges against the gold ones."""
    tp = len(recorded & gold)
    return (tp / len(recorded) if recorded else 1.0), (tp / len(gold) if gold else 1.0)


def recomputed(trace: Any, failed_claims: dict[str, str]) -> set[str]:
    """Task claims the repair recomputed (what it treated as possibly invalid)."""
    return {k for s in trace.steps if s["executed"] for k in s["outputs"] if k in failed_claims}


def gold_dependencies(case: dict[str, Any]) -> set[tuple[str, str]]:
    """The generator's (source, node) dependencies whose source is a record or an input."""
    return {(s, d) for s, d in case["gold_edges"] if s.startswith(("mem:", "input:"))}


def wrong_pairs(
    domain: str, failed_store: dict[str, str], gold_store: dict[str, str]
) -> set[tuple[str, str]]:
    """(slot, value) pairs the faulty history left in memory that the fault-free one lacks."""
    held = {p for t in gold_store.values() for p in read_pairs(t, domain)}
    return {p for t in failed_store.values() for p in read_pairs(t, domain)} - held


def score_case(
    case: dict[str, Any],
    out: Any,
    head: dict[str, str],
    *,
    failed: dict[str, Any],
    failed_store: dict[str, str],
    fault_texts: list[str],
    total_steps: int,
    provenance: dict[str, float],
) -> dict[str, float]:
    """Every per-case metric of one repaired case (``head`` is S(HEAD) after repair, the
    task note included; ``failed`` the failed run's claims and answer)."""
    trace, memo = out.trace, "memo:last_choice"
    gold_claims = case["gold"]["claims"]
    changed = {k for k in failed["claims"] if failed["claims"][k] != gold_claims.get(k)}
    store = {k: v for k, v in head.items() if k != memo}
    held = set(store.values())
    gold_store = case["gold"]["store"]
    bad = wrong_pairs(case["domain"], failed_store, gold_store)
    survives = any(trace.claims.get(k) == failed["claims"][k] for k in changed)
    survives |= any(p in bad for t in held for p in read_pairs(t, case["domain"]))
    survives |= (
        failed["answer"] in head.get(memo, "") and failed["answer"] != case["gold"]["answer"]
    )
    executed = sum(1 for s in trace.steps if s["executed"]) + out.history_steps
    return {
        "recovery": float(trace.answer == case["gold"]["answer"]),
        "faulty_removal": sum(t not in held for t in fault_texts) / len(fault_texts)
        if fault_texts
        else 1.0,
        "benign_preservation": (
            sum(store.get(i) == t for i, t in gold_store.items()) / len(gold_store)
            if gold_store
            else 1.0
        ),
        "replay_ratio": executed / total_steps,
        "backbone_calls": float(trace.calls + out.history_calls + out.extra_calls - out.memo_hits),
        "recurrence": float(survives),
        "claim_f1": claim_f1(recomputed(trace, failed["claims"]), changed),
        **provenance,
    }


def aggregate(rows: list[dict[str, Any]], seed: int = 0) -> dict[str, Any]:
    """Mean and CI of every metric overall and by domain, fault type, family and
    diagnosis (a multi-fault case counts once under each of its types and families),
    plus the per-case values of the main metrics in case order (for paired margins);
    cases marked ``not_applicable`` are left out and listed under that key."""

    def block(rs: list[dict[str, Any]]) -> dict[str, Any]:
        return {m: summarise([r["scores"].get(m, 0.0) for r in rs], seed=seed) for m in METRICS}

    groups: dict[str, dict[str, list]] = {
        k: defaultdict(list) for k in ("by_domain", "by_fault_type", "by_family", "by_diagnosis")
    }
    moot = sorted(r["case_id"] for r in rows if r["scores"].get("not_applicable"))
    rows = [r for r in rows if not r["scores"].get("not_applicable")]
    for r in rows:
        groups["by_domain"][r["domain"]].append(r)
        groups["by_diagnosis"][r.get("diagnosis", "complete")].append(r)
        for ft in r["fault_types"]:
            groups["by_fault_type"][ft].append(r)
        for fam in r.get("families", []):
            groups["by_family"][fam].append(r)
    ordered = sorted(rows, key=lambda r: r["case_id"])
    # Present only when some case is not applicable (offline, every fault reaches memory).
    extra = {"not_applicable": {"n": len(moot), "case_id": moot}} if moot else {}
    return {
        **extra,
        "all": block(rows),
        **{g: {k: block(v) for k, v in sorted(members.items())} for g, members in groups.items()},
        "per_case": {
            "case_id": [r["case_id"] for r in ordered],
            **{m: [r["scores"].get(m, 0.0) for r in ordered] for m in PAIRED},
        },  # fmt: skip
    }
