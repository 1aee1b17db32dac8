"""Scores that need every probe of a run: the RC-QA headline, consistent forgetting, and
the dedupe keys and clusters that the bootstrap uses (docs/metrics.md).

Input rows are probe sample rows as the runner writes them (``samples.jsonl``): each has
``query_id``, ``stream_id``, ``gold_version``, ``intent``, ``source``, ``probe_kind``,
``category``, ``probe`` (the probe as JSON) and ``scores`` (from
:func:`~chronobench.metrics.score_probe`). The output is a list of *units*: one per
probe row (its scores, plus ``consistent_forgetting`` on future probes) and one per
query (``rc_qa``, ``rc_qa_a``, ``rc_qa_b``). Every unit carries its cluster (the stream)
and a dedupe key; :func:`dedupe_weights` turns keys into weights so that identical
probes (same question, same v*) count once.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["dedupe_weights", "harmonic", "run_units"]


def harmonic(a: float, b: float) -> float:
    """2ab / (a + b), and 0.0 when both are 0."""
    return 2 * a * b / (a + b) if a + b > 0 else 0.0


def _qa_id(row: Mapping[str, Any]) -> str:
    probe = row.get("probe") or {}
    meta = probe.get("meta") or {}
    return str(meta.get("qa_id") or probe.get("question") or "")


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def run_units(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Probe units and query units of a run's probe rows (see the module docstring).

    ``consistent_forgetting`` (on a future probe) is its ``future_abstain`` when the same
    system answered that question correctly (``final_correct``) at the stream's last
    version in the same run; it is absent otherwise. Query units: A_q = mean ``qa_f1``
    of the query's answerable probes with a gold answer (category 5 excluded), B_q =
    mean ``future_abstain`` of its future probes; ``rc_qa`` = harmonic mean, only for
    queries that have both kinds.
    """
    rows = list(rows)
    final: dict[tuple[str, str], float] = {}
    for r in rows:
        if r.get("probe_kind") == "final_qa":
            final[(str(r.get("stream_id", "")), _qa_id(r))] = float(r["scores"]["final_correct"])
    units: list[dict[str, Any]] = []
    parts: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"a": [], "b": []})
    first: dict[str, Mapping[str, Any]] = {}
    for r in rows:
        kind = r.get("probe_kind")
        scores = dict(r["scores"])
        stream = str(r.get("stream_id", ""))
        question = str((r.get("probe") or {}).get("question", r.get("sample_id")))
        if kind == "future_qa" and final.get((stream, _qa_id(r))) == 1.0:
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
        if kind == "qa" and "qa_f1" in scores:
            parts[qid]["a"].append(float(scores["qa_f1"]))
        elif kind == "future_qa":
            parts[qid]["b"].append(float(scores["future_abstain"]))
    for qid, p in sorted(parts.items()):
        if not p["a"] or not p["b"]:
            continue
        r = first[qid]
        a, b = _mean(p["a"]), _mean(p["b"])
        units.append(
            {
                "scores": {"rc_qa": harmonic(a, b), "rc_qa_a": a, "rc_qa_b": b},
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
