"""Scores that need every probe of a run: the RC-QA headline (boundary probes the system
knows at the last version), consistent forgetting, and the dedupe keys and clusters that
the bootstrap uses (docs/metrics.md).

Input rows are probe sample rows as the runner writes them (``samples.jsonl``): each has
``query_id``, ``stream_id``, ``gold_version``, ``intent``, ``source``, ``probe_kind``,
``category``, ``probe`` (the probe as JSON) and ``scores`` (from
:func:`~chronobench.metrics.score_probe`). The output is a list of *units*: one per
probe row (its scores, plus ``consistent_forgetting`` on future probes) and one per
query (``rc_qa`` and its parts). Every unit carries its cluster (the stream)
and a dedupe key; :func:`dedupe_weights` turns keys into weights so that identical
probes (same question, same v*) count once.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chronobench.metrics.catalog import declare_metric

__all__ = ["dedupe_weights", "harmonic", "query_score", "run_units", "side_parts", "side_value"]


def harmonic(a: float, b: float) -> float:
    """2ab / (a + b), and 0.0 when both are 0."""
    return 2 * a * b / (a + b) if a + b > 0 else 0.0


def _qa_id(row: Mapping[str, Any]) -> str:
    probe = row.get("probe") or {}
    meta = probe.get("meta") or {}
    return str(meta.get("qa_id") or probe.get("question") or "")


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


#: Per-probe score the headline reads on each side, by probe format (docs/metrics.md).
_KEEP_FIELD = {"qa": "qa_f1", "recall": "recall_acc"}
_FORGET_FIELD = {"qa": "future_abstain", "recall": "recall_forget"}


def _meta(row: Mapping[str, Any]) -> Mapping[str, Any]:
    return (row.get("probe") or {}).get("meta") or {}


def side_value(parts: Mapping[Any, Sequence[float]]) -> float | None:
    """One side of a query (A_q or B_q) from its known probes' scores grouped by reach:
    ``"near"`` (the boundary session) and one group per far session. Near and far weigh
    the same; the far part is the mean over sessions of each session's mean, so a side
    is a fair sample of the whole past (or future), not of the sessions that happen to
    hold many battery items. None when no group has a score."""
    halves = side_parts(parts)
    return _mean(halves) if halves else None


def side_parts(parts: Mapping[Any, Sequence[float]]) -> list[float]:
    """The near part and the far part of one side (each present only with scores)."""
    near = parts.get("near") or []
    far = [
        _mean(v) for k, v in sorted(parts.items(), key=lambda kv: str(kv[0])) if k != "near" and v
    ]
    return ([_mean(near)] if near else []) + ([_mean(far)] if far else [])


def query_score(
    keep: Mapping[Any, Sequence[float]], forget: Mapping[Any, Sequence[float]]
) -> float:
    """H_q: the harmonic mean of the query's parts, near and far on each side (two to
    four numbers; 0 when one is 0, or when a side has none). With near parts only it is
    2AB / (A + B)."""
    a, b = side_parts(keep), side_parts(forget)
    parts = a + b
    if not a or not b or min(parts) <= 0.0:
        return 0.0
    return len(parts) / sum(1.0 / x for x in parts)


def _reach(row: Mapping[str, Any]) -> Any:
    meta = _meta(row)
    return ("far", meta.get("session_index")) if meta.get("reach") == "far" else "near"


def _side_score(row: Mapping[str, Any], scores: Mapping[str, Any]) -> tuple[str, float] | None:
    """``(side, score)`` of a boundary probe row for the headline, None for other rows."""
    meta = _meta(row)
    side, fmt = meta.get("boundary"), str(meta.get("format") or "qa")
    if side == "before" and row.get("probe_kind") == "qa":
        field = _KEEP_FIELD.get(fmt)
    elif side == "after" and row.get("probe_kind") == "future_qa":
        field = _FORGET_FIELD.get(fmt)
    else:
        return None
    if field is None or field not in scores:
        return None  # e.g. a category-5 or gold-less question: not in A
    return str(side), float(scores[field])


# The query-level fields run_units writes (docs/metrics.md, RQ2 headline).
@declare_metric(
    "rc_qa",
    "rq2",
    "RC-QA (headline)",
    order=10,
    main=True,
    title="RQ2: rollback-consistent QA, RC-QA (headline: per query, harmonic mean of "
    "keeping and forgetting at the boundary sessions and at the farther ones, on the "
    "known probes: those a fixed reference reader answers from their evidence sessions)",
    short="RC-QA",
)
@declare_metric(
    "rc_qa_a", "rq2", "A*: keeps (session at v*, earlier sessions)", order=20, short="A*"
)
@declare_metric(
    "rc_qa_b", "rq2", "B*: forgets (first session after v*, later sessions)", order=30, short="B*"
)
@declare_metric("rc_qa_a_zero", "rq2", "queries with A* = 0", order=40, higher_is_better=False)
def run_units(
    rows: Iterable[Mapping[str, Any]], known: Mapping[str, Iterable[str]] | None = None
) -> list[dict[str, Any]]:
    """Probe units and query units of a run's probe rows (see the module docstring).

    ``known`` (protocol 3): per stream, the battery items the reference reader answers
    correctly at the stream's last version (:mod:`chronobench.runner.known`): one set for
    every system scored with the run's backbone, so no system chooses which of its
    probes count. Without it (older runs) a probe is known when the system itself
    answered it correctly in its final session.

    ``consistent_forgetting`` (on a LoCoMo future probe) is its ``future_abstain`` when
    the probe is known; it is absent otherwise.

    Query units, the RC-QA headline: the query's *boundary* probes (``meta.boundary``;
    data_builders/battery.py; near ones and ``meta.reach = "far"`` ones) that are known
    are its *known* probes. A_q = score at v* over the known ``before`` probes (LoCoMo
    ``qa_f1`` or recall ``recall_acc``), B_q = forgetting over the known ``after``
    probes (``future_abstain`` or ``recall_forget``), each side by :func:`side_value`
    (near and far weigh the same, far sessions each the same). ``rc_qa`` =
    :func:`query_score`, the harmonic mean of the near and far parts of both sides (with
    near probes only, 2 A_q B_q / (A_q + B_q)), for every query with known boundary probes on both sides (with ``known``: a
    set fixed by the build and the backbone, not by the system); without ``known``, for
    every query with boundary probes on both sides, a side with no known probe scoring 0. Also per query:
    ``rc_qa_known_a`` / ``rc_qa_known_b`` (how many known probes) and ``rc_qa_a_zero``
    (1 when A_q = 0).
    """
    rows = list(rows)
    reference = known is not None
    final: dict[tuple[str, str], float] = {}
    if known is not None:
        final = {(str(s), str(q)): 1.0 for s, ids in known.items() for q in ids}
    else:
        for r in rows:
            if r.get("probe_kind") == "final_qa":
                key = (str(r.get("stream_id", "")), _qa_id(r))
                final[key] = float(r["scores"]["final_correct"])
    units: list[dict[str, Any]] = []
    sides: dict[str, dict[str, list[float]]] = defaultdict(
        lambda: {"before": [], "after": [], "n_before": [], "n_after": []}
    )
    # Per query and side: the known probes' scores by reach (near, or a far session).
    groups: dict[str, dict[str, dict[Any, list[float]]]] = defaultdict(
        lambda: {"before": defaultdict(list), "after": defaultdict(list)}
    )
    first: dict[str, Mapping[str, Any]] = {}
    for r in rows:
        kind = r.get("probe_kind")
        scores = dict(r["scores"])
        stream = str(r.get("stream_id", ""))
        question = str((r.get("probe") or {}).get("question", r.get("sample_id")))
        is_known = final.get((stream, _qa_id(r))) == 1.0
        if kind == "future_qa" and is_known and "future_abstain" in scores:
            scores["consistent_forgetting"] = scores["future_abstain"]
        # final_qa is asked without rollback: its identity does not involve v*.
        v_star = None if kind == "final_qa" else r.get("gold_version")
        units.append(
            {
                "scores": scores,
                "cluster": stream,
                "key": ("probe", stream, v_star, kind, question),
                "query_id": str(r.get("query_id", "")),
                "qa_id": _qa_id(r),
                "intent": r.get("intent"),
                "source": r.get("source"),
                "category": r.get("category"),
            }
        )
        qid = str(r.get("query_id", ""))
        first.setdefault(qid, r)
        side = _side_score(r, scores)
        if side is not None:
            name, value = side
            sides[qid][f"n_{name}"].append(1.0)
            if is_known:
                sides[qid][name].append(value)
                groups[qid][name][_reach(r)].append(value)
    for qid, p in sorted(sides.items()):
        if not p["n_before"] or not p["n_after"]:
            continue
        if reference and (not p["before"] or not p["after"]):
            # Protocol 3: the known set is the reference reader's, the same for every
            # system, so which queries have known probes on both sides is fixed by the
            # build and the backbone; a query without them tests nothing.
            continue
        r = first[qid]
        a = side_value(groups[qid]["before"]) or 0.0
        b = side_value(groups[qid]["after"]) or 0.0
        units.append(
            {
                "scores": {
                    "rc_qa": query_score(groups[qid]["before"], groups[qid]["after"]),
                    "rc_qa_a": a,
                    "rc_qa_b": b,
                    "rc_qa_a_zero": float(a == 0.0),
                    "rc_qa_known_a": float(len(p["before"])),
                    "rc_qa_known_b": float(len(p["after"])),
                },
                "cluster": str(r.get("stream_id", "")),
                # Queries restoring the same v* of a stream see the same probes: one unit.
                "key": ("query", str(r.get("stream_id", "")), r.get("gold_version")),
                "query_id": qid,
                "intent": r.get("intent"),
                "source": r.get("source"),
                "category": None,
            }
        )
    return units


def dedupe_weights(units: Sequence[Mapping[str, Any]]) -> list[float]:
    """1 / (number of units sharing the unit's key), so each distinct key weighs 1."""
    counts = Counter(u["key"] for u in units)
    return [1.0 / counts[u["key"]] for u in units]
