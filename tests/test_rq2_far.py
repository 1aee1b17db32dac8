"""RQ2 far probes: labels (data_builders/far.py, battery.py), the half-near half-far sides
of the headline (chronobench/metrics/runlevel.py) and the audit's answer policies."""

from __future__ import annotations

from typing import Any

import pytest

from chronobench.metrics.runlevel import query_score, run_units, side_value
from chronobench.tracks.rcqa.audit_policies import StreamFacts, surface_says_false
from data_builders.far import spread, unit_of
from data_builders.pools import ProbePool


def _pool(**caps: Any) -> ProbePool:
    base = dict(
        stream_id="s",
        max_answerable=3,
        max_future=3,
        max_boundary=10,
        max_recall=6,
        battery_qa=8,
        battery_recall=4,
        battery_adversarial=1,
        seed=0,
        scoring="locomo",
    )
    return ProbePool.model_validate({**base, **caps})


def test_far_probes_lie_beyond_the_boundary_sessions(tiny_built):
    starts_of = {
        sid: sorted(s["first_version"] for s in pool["sessions"])
        for sid, pool in tiny_built.pools.items()
    }
    seen = {"before": 0, "after": 0}
    for q in tiny_built.queries:
        starts = starts_of[q.stream_id]
        here = unit_of(starts, q.target_version)
        far = [p for p in q.probes if p.meta.get("reach") == "far"]
        for side in ("before", "after"):
            assert len([p for p in far if p.meta["boundary"] == side]) <= 10
        for p in far:
            seen[p.meta["boundary"]] += 1
            if p.meta["boundary"] == "before":
                # Kept: wholly in a session before the one at v*.
                assert p.kind == "qa"
                assert unit_of(starts, max(p.evidence_versions)) < here
            else:
                # Forgotten: starts after the first session after v*.
                assert p.kind == "future_qa"
                assert unit_of(starts, min(p.evidence_versions)) > here + (q.target_version > 0)
            assert p.meta["session_index"] == unit_of(
                starts,
                max(p.evidence_versions)
                if p.meta["boundary"] == "before"
                else min(p.evidence_versions),
            )
        ids = [p.meta.get("qa_id") for p in q.probes if p.kind in ("qa", "future_qa")]
        assert len(ids) == len(set(ids)), "a battery item is scored once per query"
    assert seen["before"] and seen["after"]


def test_spread_takes_one_item_per_session_in_turn():
    pool = _pool()
    items = [("a", i) for i in range(5)] + [("b", 0), ("c", 0)]
    picked = spread(items, lambda it: ord(it[0]), lambda it: f"{it[0]}{it[1]}", pool, 7, 4)
    counts: dict[int, int] = {}
    for _, unit in picked:
        counts[unit] = counts.get(unit, 0) + 1
    assert len(picked) == 4
    assert counts == {ord("a"): 2, ord("b"): 1, ord("c"): 1}
    assert spread(items, lambda it: 0, str, pool, 7, 0) == []


def test_side_value_weighs_near_and_far_alike_and_far_sessions_alike():
    parts = {"near": [1.0, 1.0], ("far", 1): [0.0, 0.0, 0.0, 0.0], ("far", 2): [1.0]}
    assert side_value(parts) == pytest.approx(0.5 * 1.0 + 0.5 * 0.5)
    assert side_value({"near": [0.5]}) == pytest.approx(0.5)
    assert side_value({("far", 3): [0.2]}) == pytest.approx(0.2)
    assert side_value({}) is None


def _row(qid: str, item: str, kind: str, side: str, field: str, value: float, far: int | None):
    meta: dict[str, Any] = {"qa_id": item, "boundary": side}
    if far is not None:
        meta.update(reach="far", session_index=far)
    return {
        "query_id": qid,
        "stream_id": "s",
        "gold_version": 5,
        "probe_kind": kind,
        "sample_id": f"{qid}/{item}",
        "probe": {"question": item, "meta": meta},
        "scores": {field: value},
    }


def test_rc_qa_is_the_harmonic_mean_of_near_and_far_parts():
    rows = [
        _row("q", "k1", "qa", "before", "qa_f1", 1.0, None),
        _row("q", "k2", "qa", "before", "qa_f1", 0.5, 1),
        _row("q", "f1", "future_qa", "after", "future_abstain", 1.0, None),
        _row("q", "f2", "future_qa", "after", "future_abstain", 0.0, 7),
        _row("q", "f3", "future_qa", "after", "future_abstain", 1.0, 8),
    ]
    known = {"s": ["k1", "k2", "f1", "f2", "f3"]}
    (unit,) = [u for u in run_units(rows, known) if "rc_qa" in u["scores"]]
    # Parts: keep near 1, keep far 0.5, forget near 1, forget far (0 + 1) / 2 per session.
    assert unit["scores"]["rc_qa_a"] == pytest.approx(0.75)
    assert unit["scores"]["rc_qa_b"] == pytest.approx(0.75)
    assert unit["scores"]["rc_qa"] == pytest.approx(4 / (1 + 2 + 1 + 2))
    # A query whose keep side is all far is still scored, on three parts.
    only_far = [r for r in rows if r["probe"]["meta"]["qa_id"] != "k1"]
    (unit,) = [u for u in run_units(only_far, known) if "rc_qa" in u["scores"]]
    assert unit["scores"]["rc_qa_a"] == pytest.approx(0.5)
    assert unit["scores"]["rc_qa"] == pytest.approx(3 / (2 + 1 + 2))
    # One part at 0 (here: every far keep probe lost) makes the query 0.
    lost = [r for r in rows if r["probe"]["meta"]["qa_id"] != "k2"]
    lost.append(_row("q", "k2", "qa", "before", "qa_f1", 0.0, 1))
    (unit,) = [u for u in run_units(lost, known) if "rc_qa" in u["scores"]]
    assert unit["scores"]["rc_qa"] == 0.0
    # Near probes only: the former 2AB / (A + B).
    assert query_score({"near": [0.5]}, {"near": [1.0]}) == pytest.approx(2 * 0.5 / 1.5)


def test_surface_rule_reads_words_never_said_with_the_subject():
    facts = StreamFacts(
        starts=(1, 3),
        n_versions=4,
        speakers=("Ann", "Bob"),
        person_stems={"Ann": frozenset({"paint", "lake"}), "Bob": frozenset({"guitar"})},
        all_stems=frozenset({"paint", "lake", "guitar"}),
    )
    assert surface_says_false("Ann plays the guitar", "Ann", facts)
    assert not surface_says_false("Ann paints the lake", "Ann", facts)
    # A word nobody said is no evidence either way for this rule.
    assert not surface_says_false("Ann paints the moon", "Ann", facts)
    assert facts.session(2) == 0 and facts.session(3) == 1
    assert facts.session_end(0) == 2 and facts.session_end(1) == 4


def test_evidence_session_reader_sees_only_the_items_sessions(tiny_built):
    from chronobench.protocols import public_writes
    from chronobench.runner.known import evidence_groups, sessions_only

    stream = tiny_built.streams[0]
    finals = [p for q in tiny_built.queries if q.stream_id == stream.stream_id for p in q.probes]
    finals = [p for p in finals if p.kind == "final_qa"]
    groups = evidence_groups(stream, finals)
    assert sum(len(g) for _, g in groups) == len(finals)
    session_of = {w.version: w.labels["session"] for w in stream.writes}
    writes = public_writes(stream)
    for sessions, group in groups:
        for p in group:
            assert {session_of[v] for v in p.evidence_versions} == set(sessions)
        part = sessions_only(writes, sessions)
        assert [w.write_id for w in part] == list(range(1, len(part) + 1))
        assert {w.labels["session"] for w in part} == set(sessions)
