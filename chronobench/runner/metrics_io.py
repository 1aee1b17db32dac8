"""From per-sample rows to ``metrics.json``, and the one-screen summary printed after a run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from chronobench.data.schema import Probe
from chronobench.metrics import aggregate, score_probe, score_selection
from chronobench.metrics.catalog import metrics as declared_metrics
from chronobench.metrics.replies import read_answer
from chronobench.metrics.runlevel import dedupe_weights, run_units
from chronobench.results.metrics_file import RunMetrics, Stat
from chronobench.results.records import ProbeRecord, SampleRecord, SelectionRecord, parse_record

# Breakdowns reported for every group (docs/metrics.md: by intent and by query source).
_BREAKDOWNS = ("intent", "source")


def _agg(units: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    # Weights are recomputed inside each group: a probe repeated only within the group
    # counts once there.
    return aggregate(
        [u["scores"] for u in units],
        seed=seed,
        clusters=[u["cluster"] for u in units],
        weights=dedupe_weights(units),
    )


def _grouped(units: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {"all": _agg(units, seed)}
    for key in _BREAKDOWNS:
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for u in units:
            groups[str(u.get(key))].append(u)
        out[f"by_{key}"] = {g: _agg(v, seed) for g, v in sorted(groups.items())}
    return out


def _selection_units(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Each query is a distinct request (no dedupe); its stream is its cluster.
    return [
        {
            "scores": r["scores"],
            "cluster": str(r.get("stream_id")),
            "key": ("selection", r.get("query_id"), r.get("sample_id")),
            "intent": r.get("intent"),
            "source": r.get("source"),
        }
        for r in rows
    ]


def _rows(records: Iterable[SampleRecord | Mapping[str, Any]]) -> tuple[list[dict], int]:
    """Plain rows of the scored records, and how many records failed (status error)."""
    rows, errors = [], 0
    for r in records:
        row = r.to_row() if isinstance(r, SampleRecord) else dict(r)
        if row.get("status", "ok") != "ok":
            errors += 1
            continue
        rows.append(row)
    return rows, errors


def compute_metrics(
    records: Iterable[SampleRecord | Mapping[str, Any]],
    *,
    seed: int = 0,
    known: Mapping[str, Iterable[str]] | None = None,
) -> RunMetrics:
    """Aggregate records: selection per selector; probes overall, per kind and per category.

    Every interval is a cluster bootstrap over streams, and repeated probes (same
    question at the same v*) count once; see :mod:`chronobench.metrics.runlevel` for
    the query-level headline (``rc_qa``) and consistent forgetting. Each selector's
    ``mrr_depth`` is the longest ranking it recorded: MRR is MRR@depth. Records whose
    status is not ``ok`` are left out and counted under ``errors`` (absent when none).
    Plain rows (dicts shaped like the records) are accepted too. ``known``: the
    reference reader's known set (:mod:`chronobench.runner.known`; protocol 3).
    """
    rows, errors = _rows(records)
    selection: dict[str, list[dict[str, Any]]] = defaultdict(list)
    probes: list[dict[str, Any]] = []
    for r in rows:
        if r["kind"] == "selection":
            selection[r["selector"]].append(r)
        else:
            probes.append(r)
    out: dict[str, Any] = {"selection": {}}
    for name, v in sorted(selection.items()):
        out["selection"][name] = _grouped(_selection_units(v), seed)
        # MRR is over the ranking the run recorded: its depth labels the column (MRR@depth).
        out["selection"][name]["mrr_depth"] = max(len(r.get("ranked") or []) for r in v)
    if probes:
        units = run_units(probes, known)
        out["probes"] = _grouped(units, seed)
        cats: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for u in units:
            if u.get("category") is not None:
                cats[str(u["category"])].append(u)
        out["probes"]["by_category"] = {c: _agg(v, seed) for c, v in sorted(cats.items())}
        # Version-selection accuracy of the system itself (what it actually restored).
        restored = [
            {
                "scores": {"selected_exact": float(r["selected_version"] == r["gold_version"])},
                "cluster": str(r.get("stream_id")),
                "key": ("restored", r["query_id"]),
            }
            for r in {
                r["query_id"]: r for r in probes if r.get("probe_kind") != "final_qa"
            }.values()
            if r.get("selected_version") is not None
        ]
        if restored:
            out["probes"]["restored"] = _agg(restored, seed)
    if any("reply" in r or "resolver" in r for r in probes):
        # A language model's replies: what did not parse, by kind (never dropped).
        from chronobench.metrics.replies import count_failures

        out["parse_failures"] = count_failures(probes)
    if errors:
        out["errors"] = errors
    return RunMetrics.model_validate(out)


def rescore(records: Iterable[SampleRecord | Mapping[str, Any]], *, k: int) -> list[SampleRecord]:
    """Recompute every record's ``scores`` from what it stores (prediction, gold,
    ranking); records of other kinds, and failed ones, are kept as they are."""
    out: list[SampleRecord] = []
    for r in map(parse_record, records):
        if r.ok and isinstance(r, SelectionRecord):
            scores = score_selection([v for v, _ in r.ranked], r.gold_version, k)
            r = r.model_copy(update={"scores": scores})
        elif r.ok and isinstance(r, ProbeRecord):
            probe = Probe.model_validate(r.probe)
            prediction = r.prediction
            if r.reply is not None:  # a language model's reply: read again, by today's rules
                task = "summary" if probe.kind == "summary" else "qa"
                prediction = read_answer(r.reply, task)
            scores = score_probe(probe, prediction)
            r = r.model_copy(update={"prediction": prediction, "scores": scores})
        out.append(r)
    return out


def _fmt(stat: Stat | None, scale: float = 100.0) -> str:
    if stat is None or stat.mean is None:
        return "-"
    return f"{stat.mean * scale:.1f}"


def summary_table(run_id: str, metrics: RunMetrics) -> str:
    """A compact text table of a run's headline numbers, with distinct counts."""
    lines = [f"run {run_id}"]
    sel = metrics.selection
    if sel:
        depths = {g.mrr_depth for g in sel.values() if g.mrr_depth}
        mrr = f"MRR@{max(depths)}" if depths else "MRR"
        lines.append(
            f"  {'selector':<20} {'n':>5} {'R@1':>6} {'R@k':>6} {'Scope':>6} {mrr:>7} clusters"
        )
        for name, g in sel.items():
            a = g.all
            st = a.get("recall_at_1")
            lines.append(
                f"  {name:<20} {st.n if st else 0:>5} {_fmt(st):>6} "
                f"{_fmt(a.get('recall_at_k')):>6} {_fmt(a.get('scope_at_k')):>6} "
                f"{_fmt(a.get('mrr')):>7} {(st.n_clusters or 0) if st else 0:>8}"
            )
    probes = metrics.probes.all if metrics.probes is not None else None
    if probes:
        cols = [
            (m.name, m.short) for m in declared_metrics() if m.short and m.section != "selection"
        ]
        lines.append("  " + " ".join(f"{h:>8}" for _, h in cols))
        lines.append("  " + " ".join(f"{_fmt(probes.get(k)):>8}" for k, _ in cols))
        counts = [probes.get(k) for k, _ in cols]
        lines.append(
            "  n/distinct "
            + " ".join((f"{st.n}/{st.n_distinct or 0}" if st else "0/0").rjust(8) for st in counts)
        )
        clusters = max((st.n_clusters or 0) for st in probes.values())
        lines.append(f"  clusters (streams): {clusters}")
    return "\n".join(lines)
