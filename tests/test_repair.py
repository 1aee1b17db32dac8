"""Repair track: planner rules on a hand-written fixture, provenance atomicity, undo,
generator determinism and metrics (offline policy, real SQLite; the store-backed tests
also on PostgreSQL)."""

from __future__ import annotations

import pytest

from chronobench.repair.agent import TaskRunner
from chronobench.repair.domains import record_text
from chronobench.repair.history import materialize
from chronobench.repair.methods import METHODS
from chronobench.repair.metrics import claim_f1, score_case
from chronobench.repair.planner import plan_repair
from chronobench.repair.policy import RepairPolicyBackbone
from chronobench.repair.provenance import Recorder, load_graph
from data_builders.repair.build import make_case, run_offline
from tests._memory_fixtures import open_store


def _rec(item, day, slot, value, role="benign", source="chat"):
    return {
        "item": item,
        "text": record_text(day, [(slot, value)], source),
        "pairs": [[slot, value]],
        "role": role,
    }


def _event(n, writes, **kw):
    base = {"event": f"e{n}", "kind": "chat", "writes": writes, "input": f"user turn {n}", "trusted": True,
            "cites": [], "stated": list(writes), "derive": [], "consolidate": [], "fault_only": False}  # fmt: skip
    return {**base, **kw}


@pytest.fixture()
def case() -> dict:
    """Shopping: a poisoned budget (r7), a note derived from it (r8, unsupported), a brand
    update made with the fault in context (r9, supported by the user's words)."""
    values = [("budget", "600 EUR"), ("brand", "Dell"), ("delivery_city", "Porto"), ("membership", "plus"),
              ("payment", "PayPal"), ("delivery_window", "evening")]  # fmt: skip
    records = {f"r{i}": _rec(f"pref:{s}", i, s, v) for i, (s, v) in enumerate(values, start=1)}
    records["r7"] = _rec("inj:budget", 7, "budget", "1500 EUR", "fault")
    records["r8"] = _rec("note:budget", 8, "budget", "1500 EUR", "note", "agent note")
    records["r9"] = _rec("pref:brand", 9, "brand", "Asus", "supported")
    events = [_event(i, [f"r{i}"]) for i in range(1, 7)]
    events.append(_event(7, ["r7"], kind="external", trusted=False, stated=[], fault_only=True))
    events.append(_event(8, ["r8"], kind="note", input=None, stated=[], cites=["r7"], derive=[["r7", "r8"]],
                         fault_only=True))  # fmt: skip
    events.append(_event(9, ["r9"], cites=["r7"]))
    c = {"case_id": "fixture", "set": "controlled", "domain": "shopping", "app": "repair", "user": "ann",
         "fault_types": ["poisoned"], "records": records, "events": events,
         "faults": [{"record": "r7", "type": "poisoned", "slot": "budget"}], "diagnosed": ["r7"],
         "params": {"category": "laptop"}, "request": "Find me a laptop.", "task_day": 10}  # fmt: skip
    failed, _ = run_offline(c, clean=False)
    gold, store = run_offline(c, clean=True)
    c["failed"], c["gold"] = failed.to_dict(), {**gold.to_dict(), "store": store}
    return c


def _failed_state(case):
    mem = open_store(embedder="hash")  # SQLite in memory, or the test's PostgreSQL database
    rec = Recorder()
    materialize(mem, case, rec)
    runner = TaskRunner(mem, case, RepairPolicyBackbone(), rec)
    return mem, runner, runner.run("run")


def test_planner_rules(each_backend, case):
    mem, _, old = _failed_state(case)
    assert "1500 EUR" in old.answer and old.answer != case["gold"]["answer"]
    plan = plan_repair(load_graph(mem, "repair", "ann"), ["mem:r7"])
    act = {a.node_id: a.action for a in plan.actions}
    assert act["mem:r7"] == "delete"  # the diagnosed fault
    assert act["mem:r8"] == "quarantine"  # derived from the fault only
    assert act["mem:r9"] == "keep"  # reached through the fault, but the user stated it
    assert act["mem:run:memo"] == "quarantine"  # the failed answer's note
    # Only the budget path is replayed: shipping and payment steps are not affected.
    assert plan.replay_steps == ["args1", "tool1", "answer"]
    assert act["step:run:args2"] == "untouched" and act["step:run:tool3"] == "untouched"
    assert act["step:run:memo"] == "skip"  # affected but cannot reach the answer
    assert "claim:run:brand" in plan.unsupported or act["claim:run:brand"] == "keep"
    assert act["claim:run:brand"] == "keep" and act["claim:run:budget"] == "invalidate"
    assert '"replay_steps"' in plan.to_json() and "quarantine" in str(plan)
    mem.close()


def test_dgr_recovers_and_is_undoable(each_backend, case):
    mem, runner, old = _failed_state(case)
    before = mem.snapshot("repair", "ann")
    ctx = {"mem": mem, "case": case, "old": old, "runner": runner, "backbone": runner.backbone, "seed": 0,
           "method": "dgr"}  # fmt: skip
    out = METHODS["dgr"](ctx)
    assert out.trace.answer == case["gold"]["answer"]
    assert [s["step_id"] for s in out.trace.steps if s["executed"]] == ["args1", "tool1", "answer"]
    store = mem.snapshot("repair", "ann")
    assert (
        "inj:budget" not in store
        and "note:budget" not in store
        and store["pref:brand"].endswith("(chat)")
    )
    scores = score_case(case, out.trace, store, out.invalidated, out.trace.calls)
    assert (
        scores["recovery"] == 1.0
        and scores["benign_preservation"] == 1.0
        and scores["recurrence"] == 0.0
    )
    head = mem.head("repair", "ann")
    parent = next(v.parent for v in mem.versions("repair", "ann") if v.version_id == head)
    mem.rollback_to_version("repair", "ann", parent)  # the repair is one commit: undo it
    assert mem.snapshot("repair", "ann") == before
    mem.close()


def test_stale_fault_restores_superseded_record(case):
    case = {**case, "events": [e for e in case["events"] if e["event"] not in ("e7", "e8", "e9")]}
    case["records"] = {
        **case["records"],
        "r7": _rec("pref:budget", 7, "budget", "300 EUR", "fault", "profile sync"),
    }
    case["events"].append(_event(7, ["r7"], kind="sync", input=None, stated=[], fault_only=True))
    mem, _, _ = _failed_state(case)
    plan = plan_repair(load_graph(mem, "repair", "ann"), ["mem:r7"])
    act = {a.node_id: a.action for a in plan.actions}
    assert act["mem:r1"] == "restore" and plan.overlay["pref:budget"].startswith(
        "[day 1] budget = 600 EUR"
    )
    ablated = plan_repair(load_graph(mem, "repair", "ann"), ["mem:r7"], support_check=False)
    assert {a.node_id: a.action for a in ablated.actions}["mem:r1"] == "quarantine"
    mem.close()


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


def test_generator_is_deterministic_and_faults_change_answers():
    a, b = make_case(0, "controlled", 4), make_case(0, "controlled", 4)
    assert a == b and a["failed"]["answer"] != a["gold"]["answer"]
    assert make_case(1, "controlled", 4)["records"] != a["records"]
    stress = make_case(0, "stress", 2)
    assert 2 <= len(stress["faults"]) <= 4


def test_claim_f1():
    assert claim_f1(set(), set()) == 1.0
    assert claim_f1({"a", "b"}, {"a"}) == pytest.approx(2 / 3)
    assert claim_f1({"c"}, {"a"}) == 0.0


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_runs(case, method):
    from chronobench.repair.run import repair_case

    row = repair_case(case, method, RepairPolicyBackbone())
    s = row["scores"]
    assert set(s) >= {
        "recovery",
        "faulty_removal",
        "benign_preservation",
        "replay_ratio",
        "recurrence",
    }
    assert 0.0 <= s["replay_ratio"] <= 1.0 and s["faulty_removal"] == 1.0


def test_restore_skips_an_item_a_kept_record_now_holds(case):
    """Stale fault over r1, then the user restates the budget (r10): r1 stays superseded."""
    case = {**case, "events": [e for e in case["events"] if e["event"] not in ("e7", "e8", "e9")]}
    records = dict(case["records"])
    records["r7"] = _rec("pref:budget", 7, "budget", "300 EUR", "fault", "profile sync")
    records["r10"] = _rec("pref:budget", 8, "budget", "450 EUR")
    case["records"] = records
    case["events"] += [
        _event(7, ["r7"], kind="sync", input=None, stated=[], fault_only=True),
        _event(10, ["r10"]),
    ]
    mem, _, _ = _failed_state(case)
    plan = plan_repair(load_graph(mem, "repair", "ann"), ["mem:r7"])
    act = {a.node_id: a.action for a in plan.actions}
    assert act["mem:r1"] == "keep" and "pref:budget" not in plan.overlay
    mem.close()


def test_repair_cell_writes_a_run_folder_and_the_report(tmp_path):
    import json

    from chronobench.repair.report import render_repair_markdown
    from chronobench.runner.cli import main

    args = ["experiment=repair", "suite=[]", "leaderboard=false", "dataset.params.n_controlled=3",
            "dataset.params.n_stress=1", f"paths.results_dir={tmp_path}/results",
            f"paths.data_dir={tmp_path}/data", f"paths.cache_dir={tmp_path}/cache"]  # fmt: skip
    assert main(args) == 0
    (run,) = (tmp_path / "results" / "runs").iterdir()
    for name in ("config.yaml", "manifest.json", "samples.jsonl", "metrics.json"):
        assert (run / name).is_file()
    rows = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(r["method"] == "dgr" and r["plan"]["actions"] for r in rows)
    md = render_repair_markdown(tmp_path / "results")
    assert (
        "| Dependency-guided repair | 3 |" in md
        and "GPT-4o, reported in the seed, not comparable" in md
    )


def test_bad_repair_config_is_rejected(tmp_path):
    from chronobench.errors import ConfigError
    from chronobench.runner.cli import main

    base = ["experiment=repair", "suite=[]", "leaderboard=false", f"paths.results_dir={tmp_path}"]
    for bad in ("system.name=nope", "dataset.granularity=huge", "+dataset.params.n_cases=3"):
        with pytest.raises(ConfigError, match=bad.split("=")[0].lstrip("+").split(".")[-1]):
            main([*base, bad])


def test_llm_style_replies_are_parsed():
    from chronobench.repair.policy import parse_slot_lines

    reply = "Sure!\n- Budget = 600 EUR.\n* `brand` = Dell\nnotes: none"
    assert parse_slot_lines(reply, ["budget", "brand", "payment"]) == {
        "budget": "600 EUR",
        "brand": "Dell",
        "payment": "unknown",
    }


def test_repair_commit_records_the_plan(case):
    mem, runner, old = _failed_state(case)
    ctx = {"mem": mem, "case": case, "old": old, "runner": runner, "backbone": runner.backbone, "seed": 0,
           "method": "dgr"}  # fmt: skip
    METHODS["dgr"](ctx)
    graph = load_graph(mem, "repair", "ann")
    removed = {e.dst for e in graph.out_edges("step:repair:plan") if e.etype == "delete"}
    assert removed == {"mem:r7", "mem:r8", "mem:run:memo"}
    assert not graph.nodes["mem:r7"].attrs["active"]
    mem.close()


def test_explain_prints_every_node():
    from chronobench.repair.explain import explain

    text = explain("controlled-0")
    assert "repair plan:" in text and "diagnosed fault" in text and "untouched" in text
    with pytest.raises(ValueError, match="controlled-<n>"):
        explain("nope-1")
