"""Repair track end to end: LLM-style replies, the repair cell and its report, config
errors, the explain view and an over-citing backbone."""

from __future__ import annotations

import random
import re

import pytest

from chronobench.tracks.repair.generate import World
from chronobench.tracks.repair.policy import RepairPolicyBackbone
from chronobench.tracks.repair.run import repair_case
from tests.test_repair import FAULT, _finish


def test_llm_style_replies_are_parsed():
    from chronobench.tracks.repair.agent import parse_reply

    reply = "Sure!\n- Budget = 600 EUR. [m2, input]\n* `brand` = Dell\nnotes: none"
    assert parse_reply(reply, ["budget", "brand", "payment"]) == {
        "budget": ("600 EUR", ("m2", "input")),
        "brand": ("Dell", ()),
        "payment": ("unknown", ()),
    }


@pytest.mark.slow
def test_repair_cell_writes_a_run_folder_and_the_report(tmp_path):
    import json

    from chronobench.commands.run import main
    from chronobench.tracks.repair.report import render_repair_markdown

    base = ["experiment=repair", "leaderboard=false", "+dataset.params.n_controlled=5",
            "+dataset.params.n_stress=2", f"paths.results_dir={tmp_path}/results",
            f"paths.data_dir={tmp_path}/data", f"paths.cache_dir={tmp_path}/cache"]  # fmt: skip
    cells = [["dataset.granularity=controlled", f"system.name={m}"] for m in ("dgr", "text_floor")]
    suite = "suite=[" + ",".join("[" + ",".join(f"'{x}'" for x in c) + "]" for c in cells) + "]"
    assert main([*base, suite]) == 0
    runs = sorted((tmp_path / "results" / "runs").iterdir())
    assert len(runs) == 2
    for name in ("config.yaml", "manifest.json", "samples.jsonl", "metrics.json"):
        assert (runs[0] / name).is_file()
    rows = [json.loads(x) for x in (runs[0] / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and all(r["plan"]["actions"] for r in rows if r["method"] == "dgr")
    metrics = json.loads((runs[0] / "metrics.json").read_text())["metrics"]
    assert metrics["per_case"]["case_id"] == [f"controlled-{i:03d}" for i in range(5)]
    md = render_repair_markdown(tmp_path / "results")
    assert (
        "| Dependency-guided repair | 5 |" in md
        and "| Text-heuristic floor (review's rule) | 5 |" in md
    )
    assert re.search(
        r"\| Text-heuristic floor \(review's rule\) \| [\d.]+ \[", md
    )  # the margin row
    assert "GPT-4o, reported in the seed, not comparable" in md and "by case family" in md


def test_bad_repair_config_is_rejected(tmp_path):
    from chronobench.commands.run import main
    from chronobench.errors import ConfigError

    base = ["experiment=repair", "suite=[]", "leaderboard=false", f"paths.results_dir={tmp_path}"]
    for bad in ("system.name=nope", "dataset.granularity=huge", "+dataset.params.n_cases=3"):
        with pytest.raises(ConfigError, match=bad.split("=")[0].lstrip("+").split(".")[-1]):
            main([*base, bad])


def test_explain_prints_every_node():
    from chronobench.tracks.repair.explain import explain

    text = explain("controlled-14")
    assert "repair plan:" in text and "diagnosed fault" in text and "rederive" in text
    with pytest.raises(ValueError, match="controlled-<n>"):
        explain("nope-1")


def test_over_citing_backbone_does_not_hold_a_decision_in_place():
    """multi_hop where the user's own older tier agrees with the faulty advice: a backbone
    citing every agreeing record cites both for the second lookup's argument; the newest
    (the advice) is re-derived, so the second lookup must re-run too."""
    w = World(random.Random(4), "shopping")
    for slot, value in [("budget", "600 EUR"), ("brand", "Dell"), ("delivery_city", "Porto"),
                        ("membership", "premium"), ("payment", "PayPal"), ("delivery_window", "evening")]:  # fmt: skip
        w.say(slot, value)
    w.say("budget", "1500 EUR", "paste")
    w.lookup(0)
    w.lookup(1)
    case = _finish(w, [{"event": "e7", "record": FAULT, "type": "poisoned", "family": "multi_hop",
                        "slot": "budget", "value": "1500 EUR"}])  # fmt: skip
    row = repair_case(case, "dgr", RepairPolicyBackbone(cite_all=True))
    assert row["scores"]["recovery"] == 1.0 and row["notes"]["rerun"] == ["e8", "e9"]
    assert row["scores"]["prov_precision"] < 1.0  # the extra citations are not gold edges
