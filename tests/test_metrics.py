"""Metric tests: golden hand-checked cases plus a few properties."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chronobench.data.schema import Probe
from chronobench.metrics import (
    ABSTAIN_TEXT,
    aggregate,
    is_abstention,
    locomo_em,
    locomo_f1,
    normalize_answer,
    rouge1,
    score_probe,
    score_selection,
    substring_em,
    summarise,
    summary_leakage,
    token_f1,
)
from chronobench.metrics.qa import best_f1, leaked
from chronobench.metrics.runlevel import dedupe_weights, run_units
from chronobench.metrics.summary import content_rouge1, novel_event_words, specific_rouge1
from chronobench.metrics.text import ABSTAIN_PHRASES, ABSTAIN_WHOLE

GOLDEN = json.loads((Path(__file__).parent / "golden" / "metrics_cases.json").read_text())
CASES = GOLDEN["cases"]


def _compute(case: dict[str, Any]) -> dict[str, Any]:
    inp = case["input"]
    kind = case["type"]
    if kind == "locomo":
        args = (inp["prediction"], inp["gold"], inp["category"])
        return {"f1": locomo_f1(*args), "em": locomo_em(*args)}
    if kind == "mab":
        return {
            "substring_em": substring_em(inp["prediction"], inp["golds"]),
            "f1": best_f1(inp["prediction"], inp["golds"]),
        }
    if kind == "probe":
        return score_probe(Probe(**inp["probe"]), inp["prediction"])
    if kind == "selection":
        return score_selection(inp["ranked"], inp["gold"], inp["k"])
    if kind == "summarise":
        return summarise(inp["values"], clusters=inp.get("clusters"), weights=inp.get("weights"))
    if kind == "rouge":
        return {"rouge1": rouge1(inp["prediction"], inp["reference"])}
    if kind == "abstention":
        return {"abstains": is_abstention(inp["prediction"], marker=inp.get("marker"))}
    if kind == "leak":
        return {"leaked": leaked(inp["prediction"], inp["golds"], inp["category"])}
    if kind == "content_rouge":
        return {
            "rouge1": rouge1(inp["prediction"], inp["reference"]),
            "content_rouge1": content_rouge1(inp["prediction"], inp["reference"], inp["names"]),
        }
    if kind == "specific_rouge":
        return {
            "content_rouge1": content_rouge1(inp["prediction"], inp["reference"], inp["names"]),
            "specific_rouge1": specific_rouge1(
                inp["prediction"], inp["reference"], inp["generic"], inp["names"]
            ),
        }
    if kind == "novel_words":
        return {"novel_words": novel_event_words(inp["events"], inp["known"], inp["names"])}
    if kind == "calibrated_leakage":
        return {
            "summary_leakage": summary_leakage(inp["prediction"], inp["novel_words"], inp["names"])
        }
    if kind == "run_units":
        units = run_units(inp["rows"])
        return {
            **{
                field: {u["query_id"]: u["scores"][field] for u in units if "rc_qa" in u["scores"]}
                for field in ("rc_qa", "rc_qa_a", "rc_qa_b")
            },
            "consistent_forgetting": {
                f"{u['query_id']}/{u['qa_id']}": u["scores"]["consistent_forgetting"]
                for u in units
                if "consistent_forgetting" in u["scores"]
            },
        }
    raise AssertionError(f"unknown golden case type {kind}")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_case(case: dict[str, Any]) -> None:
    got = _compute(case)
    expected = case["expected"]
    assert set(got) == set(expected), f"fields differ: {sorted(got)} vs {sorted(expected)}"
    for key, value in expected.items():
        if value is None:
            assert got[key] is None
        elif isinstance(value, list):
            assert got[key] == value, key
        else:
            assert got[key] == pytest.approx(value, abs=1e-9), key


def test_normalisation_rules() -> None:
    assert normalize_answer("The cat, and a dog!") == "cat dog"
    assert normalize_answer("  An  apple\tthe\n") == "apple"
    # 'a' inside words is kept: only whole words are dropped.
    assert normalize_answer("Banana and Andrew") == "banana andrew"


def test_abstain_text_is_an_abstention() -> None:
    assert is_abstention(ABSTAIN_TEXT)
    assert is_abstention(ABSTAIN_TEXT.upper())
    assert not is_abstention("")
    assert not is_abstention("Paris")


def test_f1_symmetric_and_bounded() -> None:
    pairs = [("a red car", "the red bike"), ("x y z", "z"), ("", "")]
    for a, b in pairs:
        assert token_f1(a, b) == pytest.approx(token_f1(b, a))
        assert 0.0 <= token_f1(a, b) <= 1.0


def test_summary_probe_without_reference_is_a_clear_error() -> None:
    probe = Probe(probe_id="s9", kind="summary", question="Summarise")
    with pytest.raises(ValueError, match="s9.*reference"):
        score_probe(probe, "text")


def test_selection_accepts_pairs_and_rejects_junk() -> None:
    assert score_selection([(5, 0.9), (4, 0.1)], 5)["recall_at_1"] == 1.0
    assert score_selection([], 5) == {
        "recall_at_1": 0.0,
        "recall_at_k": 0.0,
        "scope_at_k": 0.0,
        "mrr": 0.0,
    }
    with pytest.raises(TypeError):
        score_selection(["3"], 3)  # type: ignore[list-item]
    with pytest.raises(ValueError):
        score_selection([1], 1, k=0)


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.5, 0.25]
    a = summarise(values, seed=0)
    assert a == summarise(values, seed=0)
    assert a["n"] == 10
    assert a["ci_low"] <= a["mean"] <= a["ci_high"]
    assert a != summarise(values, seed=1)
    with pytest.raises(ValueError, match="NaN"):
        summarise([float("nan")])


def test_bootstrap_blocks_match_unblocked(monkeypatch: pytest.MonkeyPatch) -> None:
    # Resampling in blocks must not change the numbers (same RNG stream).
    import chronobench.metrics.bootstrap as bs

    values = [i % 7 / 7 for i in range(50)]
    whole = summarise(values, seed=3, n_resamples=200)
    monkeypatch.setattr(bs, "_BLOCK_CELLS", 50 * 7)
    assert summarise(values, seed=3, n_resamples=200) == whole


def test_aggregate_skips_missing_and_sorts_fields() -> None:
    rows = [
        {"qa_f1": 1.0, "rc_qa": 1.0},
        {"future_abstain": 1.0, "rc_qa": 1.0, "note": "x"},
        {"qa_f1": 0.0, "rc_qa": 0.0, "future_leak": None},
    ]
    out = aggregate(rows)
    assert list(out) == ["future_abstain", "qa_f1", "rc_qa"]
    assert out["qa_f1"]["n"] == 2 and out["qa_f1"]["mean"] == 0.5
    assert out["rc_qa"]["mean"] == pytest.approx(2 / 3)


def _rows(probes: list[Probe], prediction: str, query_id: str = "q1") -> list[dict[str, Any]]:
    return [
        {
            "query_id": query_id,
            "stream_id": "s1",
            "gold_version": 3,
            "intent": "undo",
            "source": "template",
            "probe_kind": p.kind,
            "category": p.category,
            "probe": p.model_dump(mode="json"),
            "scores": score_probe(p, prediction),
        }
        for p in probes
    ]


def test_headline_no_trivial_policy_wins() -> None:
    # Boundary probes the system knows at the last version: always abstaining knows
    # nothing (0); never forgetting keeps everything and forgets nothing (0); forgetting
    # everything (restoring version 1) forgets and keeps nothing (0); only keeping the
    # session at v* and forgetting the one after it wins.
    keep = Probe(
        probe_id="q",
        kind="qa",
        question="Where?",
        answers=["Paris"],
        category=2,
        meta={"qa_id": "q", "boundary": "before"},
    )
    drop = Probe(
        probe_id="f",
        kind="future_qa",
        question="Who?",
        future_answers=["Rome"],
        category=2,
        meta={"qa_id": "f", "boundary": "after"},
    )
    finals = [
        p.model_copy(update={"probe_id": f"final/{p.probe_id}", "kind": "final_qa", "answers": a})
        for p, a in ((keep, ["Paris"]), (drop, ["Rome"]))
    ]
    probes = [keep, drop, *finals]

    def headline(answers: dict[str, str]) -> list[float]:
        rows = [r for p in probes for r in _rows([p], answers[p.probe_id])]
        return [u["scores"]["rc_qa"] for u in run_units(rows) if "rc_qa" in u["scores"]]

    known = {"final/q": "Paris", "final/f": "Rome"}
    assert headline(
        {"q": ABSTAIN_TEXT, "f": ABSTAIN_TEXT, **dict.fromkeys(known, ABSTAIN_TEXT)}
    ) == [0.0]
    assert headline({"q": "Paris", "f": "Rome", **known}) == [0.0]
    assert headline({"q": ABSTAIN_TEXT, "f": ABSTAIN_TEXT, **known}) == [0.0]
    assert headline({"q": "Paris", "f": ABSTAIN_TEXT, **known}) == [1.0]


def test_repeated_probes_count_once() -> None:
    # Two queries restoring the same v* ask the same probe: one distinct probe.
    probe = Probe(probe_id="q", kind="qa", question="Where?", answers=["Paris"], category=2)
    units = run_units(_rows([probe], "Paris", "q1") + _rows([probe], "Rome", "q2"))
    stats = aggregate(
        [u["scores"] for u in units],
        clusters=[u["cluster"] for u in units],
        weights=dedupe_weights(units),
    )["qa_f1"]
    assert (stats["n"], stats["n_distinct"], stats["n_clusters"]) == (2, 1, 1)
    assert stats["mean"] == 0.5


def test_abstain_forms_documented_in_docs() -> None:
    # Every listed form is named in the project's metric docs (the list is the contract).
    doc = (Path(__file__).parents[1] / "docs" / "metrics.md").read_text()
    for form in (*ABSTAIN_PHRASES, *ABSTAIN_WHOLE):
        assert f"`{form}`" in doc, form
