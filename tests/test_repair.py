"""Repair track: recorded provenance, planner rules, session replay, baselines and floors
on a hand-built session log; generator determinism and the documented counts (the run cell
and the report: test_repair_runs) (offline policy, real SQLite; the store-backed tests also on
PostgreSQL)."""

from __future__ import annotations

import random

import pytest

from chronobench.tracks.repair.cases import agent_view, default_params, make_case, run_offline
from chronobench.tracks.repair.context import run_failed
from chronobench.tracks.repair.domains import DOMAINS
from chronobench.tracks.repair.generate import FAMILIES, FAULT_TYPES, World
from chronobench.tracks.repair.lexicon import (
    SLOT_ALIASES,
    VALUE_ALIASES,
    find_pairs,
    literal_repeat,
    paraphrase,
    slot_phrase,
)
from chronobench.tracks.repair.methods import METHODS
from chronobench.tracks.repair.metrics import claim_f1
from chronobench.tracks.repair.planner import dependency_edges, plan_repair, prompt_level
from chronobench.tracks.repair.policy import RepairPolicyBackbone
from chronobench.tracks.repair.provenance import Recorder, load_graph
from chronobench.tracks.repair.run import repair_case
from tests._memory_fixtures import open_store

FAULT = "mem:e7:ext:budget"


def _finish(w: World, faults: list[dict]) -> dict:
    case = w.case(faults, {"category": "laptop"})
    case.update(case_id="fixture", set="controlled", app="repair", user="ann", attempt=0,
                diagnosed=[f["record"] for f in faults], diagnosis="complete")  # fmt: skip
    failed, _ = run_offline(case, clean=False)
    gold, store = run_offline(case, clean=True)
    case["failed"], case["gold"] = failed.to_dict(), {**gold.to_dict(), "store": store}
    return case


@pytest.fixture()
def case() -> dict:
    """Shopping. e7 pastes a faulty budget (1500 EUR; the user said 600 EUR); e8 the user
    updates the brand with the fault in the prompt's recency window; e9 the agent writes a
    reminder note paraphrasing the faulty budget; e10 an advisory lookup turns the budget
    into a loyalty tier (premium instead of plus)."""
    w = World(random.Random(0), "shopping")
    for slot, value in [("budget", "600 EUR"), ("brand", "Dell"), ("delivery_city", "Porto"),
                        ("membership", "plus"), ("payment", "PayPal"), ("delivery_window", "evening")]:  # fmt: skip
        w.say(slot, value)
    w.say("budget", "1500 EUR", "paste")
    w.say("brand", "Asus")
    w.note("budget")
    w.lookup(0)
    return _finish(w, [{"event": "e7", "record": FAULT, "type": "poisoned", "family": "paraphrase",
                        "slot": "budget", "value": "1500 EUR"}])  # fmt: skip


def _failed(case: dict):
    mem = open_store(embedder="hash")  # SQLite in memory, or the test's PostgreSQL database
    runner, old = run_failed(mem, agent_view(case), RepairPolicyBackbone(), default_params())
    return mem, runner, old


# -- the lexicon and the offline policy ---------------------------------------------------


def test_lexicon_is_unambiguous_and_paraphrases_read_back():
    for name, d in DOMAINS.items():
        seen: dict[str, object] = {}
        for slot, pool in d.slots.items():
            for alias in SLOT_ALIASES[slot]:
                assert seen.setdefault(alias.lower(), slot) == slot
            for value in pool:
                for alias in (value, *VALUE_ALIASES[value]):
                    assert seen.setdefault(alias.lower(), ("value", value)) == ("value", value)
        for slot, pool in d.slots.items():
            for value in pool:
                for salt in ("1", "2", "3"):
                    note = paraphrase(slot, value, salt)
                    assert find_pairs(note, name) == [(slot, value)]
                    assert not literal_repeat(f"[day 3] note: {note} (agent note)", slot, value)
                said = f"Please remember that my {slot_phrase(slot)} is {value}."
                assert find_pairs(said, name) == [(slot, value)]


def test_agent_records_provenance_from_what_it_did(each_backend, case):
    """Nothing of the generator's labels reaches the agent; its graph is near the gold one."""
    visible = agent_view(case)
    assert not {"faults", "gold_edges", "gold", "failed", "diagnosed"} & set(visible)
    assert all(set(ev) <= {"event", "kind", "day", "input", "slot", "slots", "derivation", "pairs"}
               for ev in visible["events"])  # fmt: skip
    mem, _, old = _failed(case)
    assert "1500 EUR" in old.answer and old.answer != case["gold"]["answer"]
    graph = load_graph(mem, "repair", "ann")
    cited = {(e.src, e.dst) for e in graph.edges if e.etype == "cite"}
    assert (FAULT, "step:e8") in cited  # the fault sat in the benign update's prompt
    assert (FAULT, "step:e9") in cited and (FAULT, "mem:e9:note:budget") in dependency_edges(graph)
    assert ("input:e8", "mem:e8:pref:brand") in dependency_edges(graph)  # cited [input]
    assert (FAULT, "mem:e8:pref:brand") not in dependency_edges(graph)
    gold = {(s, d) for s, d in case["gold_edges"] if s.startswith(("mem:", "input:"))}
    assert dependency_edges(graph) == gold
    prompt = dependency_edges(prompt_level(graph))
    assert gold <= prompt and (FAULT, "mem:e8:pref:brand") in prompt
    mem.close()


# -- planner and dependency-guided repair --------------------------------------------------


def test_planner_rules(each_backend, case):
    mem, _, _ = _failed(case)
    graph = load_graph(mem, "repair", "ann")
    plan = plan_repair(graph, [FAULT])
    act = {a.node_id: a.action for a in plan.actions}
    assert act[FAULT] == "delete"
    assert act["mem:e9:note:budget"] == "rederive" and act["mem:e10:tool:membership"] == "rederive"
    assert act["mem:e8:pref:brand"] == "keep"  # the user's words, fault only in the prompt
    assert act["mem:e1:pref:budget"] == "untouched"  # the fault was a new item: nothing to restore
    assert plan.replay_events == ["e9", "e10"] and plan.quarantined == ["mem:run:memo"]
    assert plan.replay_steps == ["args1", "tool1", "args2", "tool2", "answer"]
    assert act["step:run:args3"] == "untouched" and act["step:run:memo"] == "skip"
    ablated = plan_repair(graph, [FAULT], support_check=False)
    act = {a.node_id: a.action for a in ablated.actions}
    assert act["mem:e8:pref:brand"] == "keep"  # no support check still keeps user statements
    assert act["claim:run:brand"] == "invalidate"  # but not a claim resting on that record
    assert '"replay_events"' in plan.to_json() and "rederive" in str(plan)
    mem.close()


def test_dgr_recovers_rederives_and_is_one_undoable_commit(each_backend, case):
    mem, runner, old = _failed(case)
    before = mem.snapshot("repair", "ann")
    row = repair_case(case, "dgr", RepairPolicyBackbone())
    s = row["scores"]
    assert s["recovery"] == 1.0 and s["benign_preservation"] == 1.0 and s["recurrence"] == 0.0
    assert row["notes"]["rerun"] == ["e9", "e10"]
    assert row["replayed_steps"] == ["args1", "tool1", "args2", "tool2", "answer"]
    # The same repair on this store: one commit, undone by a rollback to its parent.
    from chronobench.tracks.repair.context import RepairContext

    ctx = RepairContext(mem, agent_view(case), old, runner, runner.backbone, "dgr", [FAULT])
    out = METHODS["dgr"](ctx)
    store = mem.snapshot("repair", "ann")
    assert out.trace.answer == case["gold"]["answer"]
    assert store == {
        **case["gold"]["store"],
        **{k: v for k, v in store.items() if k == "memo:last_choice"},
    }
    assert "fifteen hundred" not in store["note:budget"] and store["tool:membership"].startswith(
        "[day 10] membership = plus"
    )
    head = mem.head("repair", "ann")
    parent = next(v.parent for v in mem.versions("repair", "ann") if v.version_id == head)
    mem.rollback_to_version("repair", "ann", parent)
    assert mem.snapshot("repair", "ann") == before
    mem.close()


def test_rerun_session_sees_the_repaired_past_not_the_present():
    """The user restates the budget after the note; a re-run note must still state the
    pre-fault budget of its own day, not the later one."""
    w = World(random.Random(1), "shopping")
    for slot, value in [("budget", "600 EUR"), ("brand", "Dell"), ("delivery_city", "Porto"),
                        ("membership", "plus"), ("payment", "PayPal"), ("delivery_window", "evening")]:  # fmt: skip
        w.say(slot, value)
    w.say("budget", "1500 EUR", "chat")  # another customer's message, stored as a chat
    w.note("budget")
    w.say("budget", "800 EUR")
    case = _finish(w, [{"event": "e7", "record": "mem:e7:pref:budget", "type": "wrong_user",
                        "family": "paraphrase", "slot": "budget", "value": "1500 EUR"}])  # fmt: skip
    row = repair_case(case, "dgr", RepairPolicyBackbone())
    assert row["scores"]["benign_preservation"] == 1.0 and row["notes"]["rerun"] == ["e8"]
    assert "six hundred" in case["gold"]["store"]["note:budget"]


def test_stale_fault_brings_the_overwritten_record_back():
    w = World(random.Random(2), "shopping")
    for slot, value in [("budget", "600 EUR"), ("brand", "Dell"), ("delivery_city", "Porto"),
                        ("membership", "plus"), ("payment", "PayPal"), ("delivery_window", "evening")]:  # fmt: skip
        w.say(slot, value)
    w.sync("budget", "300 EUR")
    case = _finish(w, [{"event": "e7", "record": "mem:e7:pref:budget", "type": "stale",
                        "family": "paraphrase", "slot": "budget", "value": "300 EUR"}])  # fmt: skip
    mem, _, _ = _failed(case)
    plan = plan_repair(load_graph(mem, "repair", "ann"), ["mem:e7:pref:budget"])
    assert {a.node_id: a.action for a in plan.actions}["mem:e1:pref:budget"] == "restore"
    mem.close()
    for method in ("dgr", "text_floor", "rollback_replay"):
        assert repair_case(case, method, RepairPolicyBackbone())["scores"]["recovery"] == 1.0
    assert repair_case(case, "delete_only", RepairPolicyBackbone())["scores"]["recovery"] == 0.0


# -- baselines and floors ------------------------------------------------------------------


def test_text_floor_misses_paraphrase_and_tool_route_and_full_replay_costs_more(case):
    rows = {m: repair_case(case, m, RepairPolicyBackbone()) for m in METHODS}
    rec = {m: r["scores"]["recovery"] for m, r in rows.items()}
    assert rec["text_floor"] == 0.0 and rec["delete_only"] == 0.0
    assert "mem:e9:note:budget" not in rows["text_floor"]["notes"]["deleted"]  # not word for word
    for m in (
        "dgr",
        "full_reset_replay",
        "rollback_replay",
        "dgr_prompt_provenance",
        "text_taint_replay",
    ):
        assert rec[m] == 1.0, m
    calls = {m: r["scores"]["backbone_calls"] for m, r in rows.items()}
    assert calls["dgr"] < calls["rollback_replay"] < calls["full_reset_replay"]
    # The value check prunes what prompt-level provenance over-traces (issue 30).
    assert calls["dgr"] <= calls["dgr_prompt_provenance"]
    for r in rows.values():
        assert 0.0 <= r["scores"]["replay_ratio"] <= 1.0 and r["scores"]["faulty_removal"] == 1.0


def test_text_floor_deletes_a_coincident_benign_record():
    """coincidence: advice from the faulty budget, then the user picks the same budget."""
    w = World(random.Random(3), "shopping")
    for slot, value in [("budget", "600 EUR"), ("brand", "Dell"), ("delivery_city", "Porto"),
                        ("membership", "plus"), ("payment", "PayPal"), ("delivery_window", "evening")]:  # fmt: skip
        w.say(slot, value)
    w.say("budget", "1500 EUR", "paste")
    w.lookup(0)
    w.say("budget", "1500 EUR")
    case = _finish(w, [{"event": "e7", "record": FAULT, "type": "poisoned", "family": "coincidence",
                        "slot": "budget", "value": "1500 EUR"}])  # fmt: skip
    floor = repair_case(case, "text_floor", RepairPolicyBackbone())
    assert "mem:e9:pref:budget" in floor["notes"]["deleted"]
    assert floor["scores"]["recovery"] == 0.0 and floor["scores"]["benign_preservation"] < 1.0
    dgr = repair_case(case, "dgr", RepairPolicyBackbone())
    assert dgr["scores"]["recovery"] == 1.0 and dgr["scores"]["benign_preservation"] == 1.0
    assert dgr["notes"]["rerun"] == ["e8"]


def test_a_repair_that_ignores_the_diagnosis_cannot_recover(case):
    """The mechanics without the diagnosis (none, or a benign record named) recover nothing."""
    for diagnosed in ([], ["mem:e8:pref:brand"]):
        c = {**case, "diagnosed": diagnosed}
        for method in METHODS:
            assert repair_case(c, method, RepairPolicyBackbone())["scores"]["recovery"] == 0.0, (
                method
            )


def test_backbone_judge_sees_every_record():
    from chronobench.tracks.repair.agent import Shown, make_request

    lines = ["FAULT: [day 7] budget = 1500 EUR (pasted text)", "[day 1] budget = 600 EUR (chat)",
             "CANDIDATE: [day 9] note: reminder, the spending cap is fifteen hundred euros (agent note)"]  # fmt: skip
    shown = [Shown(f"m{i}", "", "", t) for i, t in enumerate(lines, start=1)]
    q = "Should the CANDIDATE memory be dropped? slots: budget, brand. Reply drop or keep."
    judge = RepairPolicyBackbone()
    assert [
        c.text for c in judge.generate([make_request("repair_judge", shown, q, default_params())])
    ] == ["drop"]
    shown[2] = Shown("m3", "", "", "CANDIDATE: [day 1] budget = 600 EUR (chat)")
    assert [
        c.text for c in judge.generate([make_request("repair_judge", shown, q, default_params())])
    ] == ["keep"]


# -- generator ----------------------------------------------------------------------------


def test_generator_is_deterministic_and_faults_change_answers():
    a, b = make_case(0, "controlled", 4), make_case(0, "controlled", 4)
    assert a == b and a["failed"]["answer"] != a["gold"]["answer"]
    assert make_case(1, "controlled", 4)["events"] != a["events"]
    stress = make_case(0, "stress", 2)
    assert 2 <= len(stress["faults"]) <= 4


def test_documented_case_counts_match_the_generator(repo_root):
    """docs/repair.md's family x fault-type table and miss rate are the generator's."""
    doc = (repo_root / "docs" / "repair.md").read_text()
    counts = {(f, t): 0 for f in FAMILIES for t in FAULT_TYPES}
    for i in range(150):
        counts[(FAMILIES[(i // 3) % 5], FAULT_TYPES[(i // 15) % 4])] += 1
    for fam in FAMILIES:
        row = " | ".join(str(counts[(fam, t)]) for t in FAULT_TYPES)
        assert f"| {fam} | {row} | {sum(counts[(fam, t)] for t in FAULT_TYPES)} |" in doc
    for i in (0, 3, 7):
        c = make_case(0, "stress", i)
        assert c["diagnosis"] == ("missed" if i % 4 == 3 else "complete")
        assert len(c["diagnosed"]) == len(c["faults"]) - (i % 4 == 3)
    missed = sum(1 for i in range(50) if i % 4 == 3)
    assert f"{missed} of 50 cases ({100 * missed // 50}%)" in doc
    first = make_case(0, "controlled", 0)
    assert first["families"] == ["paraphrase"] and first["fault_types"] == ["poisoned"]


def test_claim_f1():
    assert claim_f1(set(), set()) == 1.0
    assert claim_f1({"a", "b"}, {"a"}) == pytest.approx(2 / 3)
    assert claim_f1({"c"}, {"a"}) == 0.0


# -- store, cell, report, explain ----------------------------------------------------------


def test_provenance_is_written_with_the_commit(each_backend):
    mem = open_store(embedder="hash")
    rec = Recorder()
    rec.node("input:x", "input", text="hi", trusted=True)

    def boom(conn, sid, vid):
        rec.write(conn, sid, vid)
        raise RuntimeError("provenance failed")

    with pytest.raises(RuntimeError):
        mem.commit(
            "a",
            "u",
            [{"op": "add", "item_id": "k", "text": "v"}],
            source="t",
            reason="r",
            on_commit=boom,
        )
    assert mem.snapshot("a", "u") == {} and not load_graph(mem, "a", "u").nodes
    rec.node("input:y", "input", text="ok", trusted=True)
    mem.commit(
        "a",
        "u",
        [{"op": "add", "item_id": "k", "text": "v"}],
        source="t",
        reason="r",
        on_commit=rec.write,
    )
    assert set(load_graph(mem, "a", "u").nodes) == {"input:y"}
    mem.close()
