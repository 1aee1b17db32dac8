"""From per-sample rows to ``metrics.json``, and the one-screen summary printed after a run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from chronobench.data.schema import Probe
from chronobench.metrics import aggregate, score_probe, score_selection

# Breakdowns reported for every group (docs/metrics.md: by intent and by query source).
_BREAKDOWNS = ("intent", "source")


def _grouped(rows: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {"all": aggregate([r["scores"] for r in rows], seed=seed)}
    for key in _BREAKDOWNS:
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            groups[str(r.get(key))].append(r["scores"])
        out[f"by_{key}"] = {g: aggregate(v, seed=seed) for g, v in sorted(groups.items())}
    return out


def compute_metrics(rows: Iterable[dict[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """Aggregate rows: selection per selector; probes overall, per kind and per category."""
    rows = list(rows)
    selection: dict[str, list[dict[str, Any]]] = defaultdict(list)
    probes: list[dict[str, Any]] = []
    for r in rows:
        if r["kind"] == "selection":
            selection[r["selector"]].append(r)
        else:
            probes.append(r)
    out: dict[str, Any] = {
        "selection": {name: _grouped(v, seed) for name, v in sorted(selection.items())}
    }
    if probes:
        out["probes"] = _grouped(probes, seed)
        cats: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in probes:
            if r.get("category") is not None:
                cats[str(r["category"])].append(r["scores"])
        out["probes"]["by_category"] = {c: aggregate(v, seed=seed) for c, v in sorted(cats.items())}
        # Version-selection accuracy of the system itself (what it actually restored).
        sel = [
            {"selected_exact": float(r["selected_version"] == r["gold_version"])}
            for r in {r["query_id"]: r for r in probes}.values()
            if r.get("selected_version") is not None
        ]
        if sel:
            out["probes"]["restored"] = aggregate(sel, seed=seed)
    return out


def rescore(rows: list[dict[str, Any]], *, k: int) -> list[dict[str, Any]]:
    """Recompute every row's ``scores`` from what it stores (prediction, gold, ranking)."""
    out = []
    for r in rows:
        r = dict(r)
        if r["kind"] == "selection":
            r["scores"] = score_selection([v for v, _ in r["ranked"]], r["gold_version"], k)
        else:
            r["scores"] = score_probe(Probe.model_validate(r["probe"]), r["prediction"])
        out.append(r)
    return out


def _fmt(stat: dict[str, Any] | None, scale: float = 100.0) -> str:
    if not stat or stat.get("mean") is None:
        return "-"
    return f"{stat['mean'] * scale:.1f}"


def summary_table(run_id: str, metrics: dict[str, Any]) -> str:
    """A compact text table of a run's headline numbers."""
    lines = [f"run {run_id}"]
    sel = metrics.get("selection") or {}
    if sel:
        lines.append(f"  {'selector':<12} {'n':>5} {'R@1':>6} {'R@k':>6} {'Scope':>6} {'MRR':>6}")
        for name, g in sel.items():
            a = g["all"]
            n = (a.get("recall_at_1") or {}).get("n", 0)
            lines.append(
                f"  {name:<12} {n:>5} {_fmt(a.get('recall_at_1')):>6} "
                f"{_fmt(a.get('recall_at_k')):>6} {_fmt(a.get('scope_at_k')):>6} "
                f"{_fmt(a.get('mrr')):>6}"
            )
    probes = (metrics.get("probes") or {}).get("all")
    if probes:
        cols = [
            ("rc_qa", "RC-QA"),
            ("qa_f1", "QA F1"),
            ("future_abstain", "Abst"),
            ("future_leak", "Leak"),
            ("rouge1", "R-1"),
            ("summary_leakage", "SumLeak"),
        ]
        lines.append("  " + " ".join(f"{h:>8}" for _, h in cols))
        lines.append("  " + " ".join(f"{_fmt(probes.get(k)):>8}" for k, _ in cols))
    return "\n".join(lines)
