"""Repair track: the retrieval sets (builder repair-6). Notes and lookups read what
retrieval returns for the query they logged; which records it returned is in the
provenance only, so a planner reading the log has to guess it."""

from __future__ import annotations

from functools import cache

import pytest

from chronobench.tracks.repair.cases import SET_BUILDER, agent_view, make_case
from chronobench.tracks.repair.dataset import REPAIR
from chronobench.tracks.repair.graph_free import reading
from chronobench.tracks.repair.history import agent_reads
from chronobench.tracks.repair.retrieval import (
    RETRIEVAL_SETS,
    TOP_K,
    lexical_top,
    retrieve,
    retrieves,
)


@cache
def _case(subset: str, index: int) -> dict:
    return make_case(0, subset, index)


def test_retrieval_sets_are_their_own_builder_and_granularities():
    assert set(RETRIEVAL_SETS) <= set(REPAIR.granularities)
    assert SET_BUILDER["retrieval_controlled"] == SET_BUILDER["retrieval_stress"] == "repair-6"
    assert SET_BUILDER["earned2_controlled"] == "repair-5"
    case = _case("retrieval_controlled", 1)
    assert case["case_id"] == "retrieval_controlled-001"


def test_retrieve_is_top_k_in_store_order_with_newer_first_on_ties():
    items = {
        "a": "[day 1] budget = 300 EUR (chat)",
        "b": "[day 2] brand = Dell (chat)",
        "c": "[day 3] budget = 450 EUR (chat)",
        "d": "[day 4] note: spending cap of 600 EUR (agent note)",
        "e": "[day 5] budget = 600 EUR (pasted text)",
    }
    top = retrieve(items, "Remind me of my budget next time.", k=2)
    assert len(top) == 2 and top == sorted(top, key=list(items).index)
    assert retrieve(items, "budget", k=2) == retrieve(dict(items), "budget", k=2)  # deterministic
    assert retrieve({}, "budget") == []
    # Same word overlap: the newer records win the tie.
    assert lexical_top(items, "my budget", k=2) == ["c", "e"]


def test_only_notes_and_lookups_of_the_retrieval_sets_log_a_query():
    case = _case("retrieval_controlled", 1)
    queried = [e for e in agent_view(case)["events"] if retrieves(e)]
    assert queried and {e["kind"] for e in queried} <= {"note", "lookup"}
    for e in queried:  # the user's words, and for a lookup what it searches memory for
        assert e["input"] in e["query"]
    earned2 = _case("earned2_controlled", 1)
    assert not any(retrieves(e) for e in earned2["events"])


def test_planner_readings_of_a_retrieval_session():
    items = {
        "pref:budget": "[day 1] budget = 300 EUR (chat)",
        "ext:budget": "[day 2] budget = 1500 EUR (pasted text)",
        "tool:membership": "[day 3] membership = plus (advisor.tier)",
        "note:budget": "[day 4] note: spending cap of 450 EUR (agent note)",
    }
    q = "Remind me of my budget next time."
    ev = {"event": "e9", "kind": "note", "slot": "budget", "input": q, "query": q}
    # The agent reads the newest budget record among the top-k retrieval returned; the
    # retriever planner replays exactly that, and a session without a query reads newest.
    shown = {i: items[i] for i in retrieve(items, q)}
    assert len(shown) == TOP_K
    assert agent_reads(ev, items, "shopping") == reading(ev, items, "shopping", "retriever")
    plain = {k: v for k, v in ev.items() if k != "query"}
    assert reading(plain, items, "shopping", "retriever") == {"budget": "450 EUR"}
    # ``slot``: every record stating the slot, so any change to one re-runs the session.
    assert [i for i, _ in reading(ev, items, "shopping", "slot")["budget"]] == [
        "pref:budget",
        "ext:budget",
        "note:budget",
    ]
    with pytest.raises(ValueError, match="lexical"):
        reading(ev, items, "shopping", "nearest")


def test_the_graph_records_what_retrieval_returned():
    from chronobench.tracks.repair.policy import RepairPolicyBackbone
    from chronobench.tracks.repair.run import repair_case

    case = _case("retrieval_controlled", 12)
    row = repair_case(case, "dgr", RepairPolicyBackbone())
    assert row["scores"]["recovery"] == 1.0 and row["scores"]["recurrence"] == 0.0
    # The note e24 cited nothing the fault touched, but retrieval had shown it a record
    # the fault's lookup wrote: only the recorded retrieval says it must be re-run.
    assert "e24" in row["notes"]["rerun"]
    newest = repair_case(case, "graph_free_planner", RepairPolicyBackbone())
    assert newest["scores"]["recovery"] == 0.0 and "e24" not in newest["notes"]["rerun"]


@pytest.mark.slow
def test_fast_retrieval_audit_lists_every_planner_as_a_baseline_with_its_margin():
    from chronobench.audit.registry import AUDITS, AuditOptions

    audits = AUDITS.entry("repair_retrieval").load()(AuditOptions(fast=True))
    assert [a.track for a in audits] == ["repair_retrieval"] * 3
    for a in audits:
        assert all(c.strictly_decreasing() for c in a.curves)
        assert a.oracle == pytest.approx(1.0) and a.interval.mean <= a.oracle + 1e-9
        # Every planner is a baseline with DGR's paired margin, none an attack; the
        # zero-call rules driving the planner stay attacks.
        planners = {f"graph_free_planner{r}" for r in ("", "_lexical", "_slot", "_retriever")}
        assert {b.name.split(" (")[0] for b in a.baselines} == planners
        assert all(b.margin is not None and b.margin.n == a.interval.n for b in a.baselines)
        attacks = {x.name for x in a.attacks}
        assert not any(x.startswith(tuple(f"{p} (" for p in planners)) and "surface" not in x
                       for x in attacks)  # fmt: skip
        assert "graph_free_planner (surface_lookup diagnosis)" in attacks
        assert not a.control and a.comparison().startswith("DGR ")
