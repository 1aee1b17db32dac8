"""Repair track: the sets whose diagnosis must be earned (builder repair-4). The log's
surface must not give the faults away: benign untrusted sessions are followed up as
faults are, benign summaries change values, slot order in merges is shuffled."""

from __future__ import annotations

from functools import cache

import pytest

from chronobench.tracks.repair.cases import SET_BUILDER, agent_view, make_case
from chronobench.tracks.repair.detect import DETECTORS, detection_scores, session_kind
from chronobench.tracks.repair.history import session_reads

UNTRUSTED = ("paste", "sync", "forwarded", "summary_job")


@cache
def _cases(subset: str, n: int) -> tuple:
    step = 150 // n if "controlled" in subset else 50 // n
    return tuple(make_case(0, subset, i) for i in range(0, step * n, step))


def _precision_recall(cases) -> tuple[float, float, float]:
    """(surface rule precision, its recall, the fault share of untrusted sessions)."""
    tp = fp = fn = faults = untrusted = 0.0
    for case in cases:
        view = agent_view(case)
        found = DETECTORS["surface"](view, None, None, None)
        assert found.calls == 0
        d = detection_scores(case, found.events)
        tp, fp, fn = tp + d["det_tp"], fp + d["det_fp"], fn + d["det_fn"]
        untrusted += sum(session_kind(e) in UNTRUSTED for e in view["events"])
        faults += len(case["faults"])
    return tp / (tp + fp), tp / (tp + fn), faults / untrusted


def test_sets_are_versioned_apart_and_ids_name_their_set():
    assert SET_BUILDER["controlled"] != SET_BUILDER["earned_controlled"]
    case = make_case(0, "earned_controlled", 3)
    assert case["case_id"] == "earned_controlled-003" and case["set"] == "earned_controlled"
    with pytest.raises(ValueError, match="earned_stress"):
        make_case(0, "earned", 0)


def test_surface_detector_is_at_chance_on_the_earned_set_but_not_the_control():
    prec, rec, share = _precision_recall(_cases("earned_controlled", 30))
    # What it flags is a fault at about the base rate (no better than flagging every
    # untrusted session), and it misses faults whose merge lists another slot first.
    assert prec < share + 0.05, (prec, share)
    assert rec < 1.0
    control, control_rec, _ = _precision_recall(_cases("controlled", 15))
    assert control > 0.8 and control_rec == 1.0


def _followed_up(case: dict, event: str) -> bool:
    """Whether a note, lookup or merge reads a slot the session states before anything
    else restates it (the surface rule's own test, for one session)."""
    view = agent_view(case)
    found = DETECTORS["surface"](view, None, None, None)
    return event in found.events


def test_benign_untrusted_sessions_are_followed_up_like_faults():
    cases = _cases("earned_controlled", 30)
    benign = [(c, b) for c in cases for b in c["benign"]]
    assert len(benign) >= 2.5 * len(cases)
    followed = sum(_followed_up(c, b["event"]) for c, b in benign) / len(benign)
    faults = sum(_followed_up(c, f["event"]) for c in cases for f in c["faults"]) / len(cases)
    assert followed > 0.8 and abs(followed - faults) < 0.15, (followed, faults)
    # Every follow-up kind comes after benign sessions too.
    families = {b["family"] for _, b in benign}
    assert families == {"paraphrase", "coincidence", "tool_argument", "consolidation", "multi_hop"}
    # The user's own typed statements get follow-ups too.
    assert sum(len(c["own_follow_ups"]) for c in cases) > 0


def test_benign_summaries_change_values_and_merges_list_slots_in_any_order():
    cases = _cases("earned_controlled", 30) + _cases("earned_stress", 10)
    modes = {b["mode"] for c in cases for b in c["benign"] if b["kind"] == "summary_job"}
    assert {"restate", "update"} <= modes or {"restate", "update_confirmed"} <= modes
    first = total = 0
    for case in cases:
        slots = {f["slot"] for f in case["faults"]}
        for ev in case["events"]:
            if ev["kind"] == "consolidate" and slots & set(ev["slots"]):
                total += 1
                first += ev["slots"][0] in slots
            if ev["kind"] == "summary_job" and ev["event"] in {f["event"] for f in case["faults"]}:
                total += 1
                first += ev["pairs"][0][0] in slots
    assert total >= 10 and first < 0.8 * total  # the control sets: always first


def test_faults_sit_anywhere_among_the_untrusted_sessions():
    positions = []
    for case in _cases("earned_controlled", 30):
        untrusted = [e["event"] for e in case["events"] if session_kind(e) in UNTRUSTED]
        positions.append(untrusted.index(case["faults"][0]["event"]) / max(1, len(untrusted) - 1))
    assert min(positions) == 0.0 and max(positions) == 1.0
    assert 0.3 < sum(positions) / len(positions) < 0.7


def test_earned_cases_still_need_a_repair_and_a_chain_lookup_reads_its_slot():
    from chronobench.tracks.repair.domains import DOMAINS

    for case in _cases("earned_stress", 10):
        assert case["failed"]["answer"] != case["gold"]["answer"]
        assert case["diagnosis"] in ("complete", "missed")
    for case in _cases("earned_controlled", 30):
        head = DOMAINS[case["domain"]].chain[0].source
        for ev in case["events"]:
            if ev["kind"] == "lookup" and ev["derivation"] == DOMAINS[case["domain"]].chain[0].name:
                assert session_reads(ev, case["domain"]) == {head}
