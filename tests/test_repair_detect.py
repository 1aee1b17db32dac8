"""Repair track, issue 30: benign untrusted sessions (the diagnosis must be earned), the
pluggable detectors and their scores."""

from __future__ import annotations

from collections import Counter

from chronobench.tracks.repair.cases import make_case
from chronobench.tracks.repair.generate import SOURCES


def _untrusted(case: dict) -> list[tuple[str, str, bool]]:
    """(kind, source phrase, is a fault) of every untrusted session of a case."""
    faults = {f["event"] for f in case["faults"]}
    out = []
    for ev in case["events"]:
        text = ev.get("input") or ""
        kind = "forwarded" if text.startswith("Forwarded from") else ev["kind"]
        if kind not in ("paste", "sync", "forwarded", "summary_job"):
            continue
        src = next((s for s in SOURCES.get(kind, ()) if s in text), "")
        out.append((kind, src, ev["event"] in faults))
    return out


def test_most_untrusted_sessions_are_benign_and_kind_or_source_alone_is_chance():
    cases = [make_case(0, "controlled", i) for i in range(45)]
    cases += [make_case(0, "stress", i) for i in range(10)]
    rows = [r for c in cases for r in _untrusted(c)]
    total, bad = Counter(), Counter()
    for kind, src, fault in rows:
        for key in (kind, (kind, src)):
            total[key] += 1
            bad[key] += fault
    share = sum(f for *_, f in rows) / len(rows)
    assert share <= 0.30  # at least 70% benign
    for key, n in total.items():
        # Every kind and every (kind, source) group holds faults at the overall rate
        # (within sampling error), so a rule on the template or the source alone does no
        # better than flagging nothing: what it flags is benign at the base rate.
        sigma = (share * (1 - share) / n) ** 0.5
        assert abs(bad[key] / n - share) < 3 * sigma + 0.02, (key, bad[key], n)
    assert {k for k, *_ in rows} == {"paste", "sync", "forwarded", "summary_job"}


def test_detectors_see_the_view_only_and_are_scored_against_the_faults():
    from chronobench.tracks.repair.cases import VISIBLE, agent_view, default_params
    from chronobench.tracks.repair.detect import DETECTORS, detection_scores, untrusted_sessions
    from chronobench.tracks.repair.policy import RepairPolicyBackbone

    total: Counter = Counter()
    for i in range(0, 60, 4):  # every family and fault type
        case = make_case(0, "controlled", i)
        view = agent_view(case)
        assert set(view) == set(VISIBLE)
        benign = {b["event"]: b["mode"] for b in case["benign"]}
        floor = DETECTORS["untrusted"](view, None, RepairPolicyBackbone(), default_params())
        assert floor.calls == 0
        assert set(floor.events) == {e["event"] for e in untrusted_sessions(view)}
        judged = DETECTORS["judge"](view, None, RepairPolicyBackbone(), default_params())
        assert judged.calls == len(untrusted_sessions(view))
        # A benign update the user confirms later is never flagged.
        assert not [e for e in judged.events if benign.get(e) == "update_confirmed"]
        for name, det in (("floor", floor), ("judge", judged)):
            for k, v in detection_scores(case, det.events).items():
                total[(name, k)] += v
    assert (
        total[("floor", "det_fn")] == 0
        and total[("floor", "det_fp")] > 2 * total[("floor", "det_tp")]
    )
    # The judge earns precision and pays recall (a fault the user later repeats is missed).
    assert total[("judge", "det_fp")] < total[("floor", "det_fp")]
    assert 0 < total[("judge", "det_fn")] < total[("judge", "det_tp")]


def test_repair_on_a_detectors_diagnosis_reports_its_scores():
    from chronobench.tracks.repair.policy import RepairPolicyBackbone
    from chronobench.tracks.repair.run import repair_case

    case = make_case(0, "controlled", 1)
    row = repair_case(case, "dgr", RepairPolicyBackbone(), 0, diagnosis="untrusted")
    s = row["scores"]
    assert row["diagnosed_by"] == "untrusted" and s["det_fn"] == 0 and s["det_fp"] >= 1
    assert row["n_diagnosed"] > len(case["faults"])
    given = repair_case(case, "dgr", RepairPolicyBackbone(), 0)["scores"]
    assert given["det_fp"] == 0 and given["det_fn"] == 0 and given["recovery"] == 1.0
