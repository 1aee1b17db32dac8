"""Repair track, issue 30: the graph-free and memoised baselines, value-level support in
DGR, the replay-noise model and sessions that cannot be re-run (offline policy)."""

from __future__ import annotations

import pytest

from chronobench.tracks.repair.cases import agent_view, make_case
from chronobench.tracks.repair.noise import CallLayer, MemoBackbone, NoiseModel, unreplayable
from chronobench.tracks.repair.policy import RepairPolicyBackbone
from chronobench.tracks.repair.run import repair_case


def _row(case, method, **kw):
    return repair_case(case, method, RepairPolicyBackbone(), 0, **kw)


def test_value_replay_and_memo_replay_recover_and_dgr_never_needs_more_calls():
    for i in (0, 4, 20, 46):  # paraphrase, coincidence, stale coincidence, summary drift
        case = make_case(0, "controlled", i)
        rows = {
            m: _row(case, m) for m in ("dgr", "value_replay", "memo_replay", "full_reset_replay")
        }
        assert all(r["scores"]["recovery"] == 1.0 for r in rows.values()), i
        calls = {m: r["scores"]["backbone_calls"] for m, r in rows.items()}
        assert (
            calls["dgr"]
            <= calls["value_replay"]
            <= calls["memo_replay"]
            < calls["full_reset_replay"]
        )
        assert rows["memo_replay"]["notes"]["memo_hits"] > 0
    # coincidence: the user's later chat naming the slot is re-run by the graph-free
    # method (its slot's value changed) but not by DGR (its record rests on the input).
    case = make_case(0, "controlled", 4)
    assert (
        _row(case, "dgr")["scores"]["backbone_calls"]
        < _row(case, "value_replay")["scores"]["backbone_calls"]
    )


def test_value_level_support_keeps_what_a_summary_still_supports():
    # controlled-046: a drifted nightly summary; the task read other values of it.
    case = make_case(0, "controlled", 46)
    value, record = _row(case, "dgr"), _row(case, "dgr_record_support")
    assert value["scores"]["recovery"] == record["scores"]["recovery"] == 1.0
    assert value["scores"]["backbone_calls"] < record["scores"]["backbone_calls"]
    assert len(value["replayed_steps"]) < len(record["replayed_steps"])


def _request(text_lines: list[str], question: str):
    from chronobench.protocols import GenerationParams
    from chronobench.tracks.repair.agent import Shown, make_request

    shown = [Shown(f"m{n}", "", "", t) for n, t in enumerate(text_lines, start=1)]
    return make_request("repair_args", shown, question, GenerationParams(max_new_tokens=160))


def test_noise_model_is_seeded_coupled_across_rates_and_keyed_as_documented():
    req = _request(
        [
            "[day 2] budget = 600 EUR (chat)",
            "[day 5] budget = 800 EUR (chat)",
            "[day 3] brand = Dell (chat)",
        ],
        "User request: x\nWhich values should be used? slots: budget, brand. One line per slot.",
    )
    reply = "budget = 800 EUR [m2]\nbrand = Dell [m3]"
    assert not NoiseModel.uniform(0.0).active
    assert NoiseModel.uniform(1.0).apply(req, reply, "c") != reply
    slipped = {
        r: [c for c in map(str, range(200)) if "600 EUR" in NoiseModel(slip=r).apply(req, reply, c)]
        for r in (0.05, 0.2)
    }
    assert set(slipped[0.05]) <= set(slipped[0.2]) and 0 < len(slipped[0.05]) < len(slipped[0.2])
    assert NoiseModel(omit=1.0).apply(req, reply, "c") == "budget = 800 EUR\nbrand = Dell"
    wrong = NoiseModel(miscite=1.0).apply(req, reply, "c")
    assert "[m2]" not in wrong.splitlines()[0] and "800 EUR" in wrong
    # Keyed per call a repeated prompt draws afresh; keyed by prompt it does not.
    layer = CallLayer(_Fixed(reply), NoiseModel.uniform(0.5, key="call"))
    first = [layer.generate([req])[0].text for _ in range(12)]
    assert len(set(first)) > 1
    layer = CallLayer(_Fixed(reply), NoiseModel.uniform(0.5, key="prompt"))
    assert len({layer.generate([req])[0].text for _ in range(12)}) == 1


class _Fixed:
    def __init__(self, text: str) -> None:
        self.text = text

    def generate(self, requests):
        from chronobench.protocols import Completion

        return [Completion(self.text) for _ in requests]


def test_memo_backbone_answers_known_prompts_without_a_call():
    req = _request(["[day 2] budget = 600 EUR (chat)"], "slots: budget.")
    inner = _Fixed("budget = 600 EUR [m1]")
    layer = CallLayer(inner)
    layer.generate([req])
    memo = MemoBackbone(_Fixed("never asked"), layer.memo)
    assert memo.generate([req])[0].text == "budget = 600 EUR [m1]" and memo.hits == 1


@pytest.mark.parametrize("key", ["call", "prompt"])
def test_noisy_cases_are_deterministic_and_prompt_keying_makes_memo_replay_exact(key):
    case = make_case(0, "controlled", 7)
    noise = NoiseModel.uniform(0.2, seed=3, key=key)
    a, b = (
        _row(case, "full_reset_replay", noise=noise),
        _row(case, "full_reset_replay", noise=noise),
    )
    assert a["answer"] == b["answer"] and a["scores"] == b["scores"]
    if key == "prompt":
        memo = _row(case, "memo_replay", noise=noise)
        assert memo["answer"] == a["answer"]


def test_unreplayable_sessions_are_reapplied_not_rerun():
    case = make_case(0, "controlled", 0)
    view = agent_view(case)
    assert unreplayable(view, None) == set()
    gone = unreplayable(view, 2)
    assert {e["event"] for e in view["events"] if e["kind"] == "paste"} <= gone
    assert {e["event"] for e in view["events"] if view["task_day"] - e["day"] > 2} <= gone
    everything = unreplayable(view, 0)
    assert everything == {e["event"] for e in view["events"] if e["day"] < view["task_day"]}
    for method in ("dgr", "value_replay", "full_reset_replay", "memo_replay"):
        row = _row(case, method, retention=0)
        task_calls = sum(1 for s in row["replayed_steps"] if not s.startswith("tool"))
        assert row["scores"]["backbone_calls"] <= task_calls, method  # no session re-run


def test_checked_citations_catch_wrong_ones_and_leave_exact_ones_alone():
    from chronobench.tracks.repair.cases import default_params
    from chronobench.tracks.repair.context import run_failed
    from chronobench.tracks.repair.planner import suspect_citations
    from chronobench.tracks.repair.provenance import load_graph
    from chronomem import ChronoMem

    case = make_case(0, "controlled", 6)
    with ChronoMem(":memory:", embedder="hash") as mem:
        run_failed(mem, agent_view(case), RepairPolicyBackbone(), default_params())
        assert (
            suspect_citations(load_graph(mem, case["app"], case["user"]), case["domain"]) == set()
        )
    exact = {m: _row(case, m) for m in ("dgr", "dgr_checked_citations")}
    assert exact["dgr"]["scores"] == exact["dgr_checked_citations"]["scores"]
    # controlled-006 with wrong citations at rate 0.1: DGR trusts one and replays
    # nothing; with the citations checked against the prompt it recovers.
    noise = NoiseModel(miscite=0.1)
    plain, checked = (
        _row(case, "dgr", noise=noise),
        _row(case, "dgr_checked_citations", noise=noise),
    )
    assert plain["scores"]["recovery"] == 0.0 and checked["scores"]["recovery"] == 1.0
