"""scripts/nl_eval.py scores a request written to be refused as the main job does
(refusing is right), and prints a refusal set's count refused rather than an R@1."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("nl_eval", ROOT / "scripts" / "nl_eval.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_refusal_request_scores_one_when_nothing_is_ranked() -> None:
    nl_eval = _script()
    refuse = SimpleNamespace(meta={"expect": "refuse"}, target_version=None)
    act = SimpleNamespace(meta={}, target_version=7)
    assert nl_eval.score_request([], refuse) == (True, 1.0)
    assert nl_eval.score_request([3, 7], refuse) == (True, 0.0)
    assert nl_eval.score_request([7, 3], act) == (False, 1.0)
    assert nl_eval.score_request([], act) == (False, 0.0)


def test_a_refusal_set_prints_the_count_refused() -> None:
    nl_eval = _script()
    lines = nl_eval.report(
        "probes",
        "session",
        {"all": [1.0, 0.0], "present": [1.0, 0.0]},
        {"all": [1.0, 1.0, 0.0], "filler": [1.0, 1.0, 0.0]},
    )
    assert lines[0].split()[:3] == ["probes", "session", "all"] and "R@1=0.5000" in lines[0]
    assert any("refuse:all" in x and "refused=2/3" in x for x in lines)
    assert any(x.split()[2] == "filler" and "refused=2/3" in x for x in lines)
    only_refusals = nl_eval.report("refuse_set", "session", {}, {"all": [1.0, 1.0]})
    assert only_refusals == [f"refuse_set session {'refuse:all':28s} n=  2 refused=2/2"]
    assert not any("R@1" in x for x in only_refusals)
