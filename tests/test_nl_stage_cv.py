"""scripts/nl_stage_cv.py: a stage's weights are judged on conversations they were not
fitted on, so a re-pick that fits one conversation's misses does not count as a gain."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "nl_stage_cv.py"


@pytest.fixture(scope="module")
def cv():
    spec = importlib.util.spec_from_file_location("nl_stage_cv", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(conv: str, gold: int, cands: list[tuple[int, float, float]]) -> dict:
    """A request whose candidates are (target, reranker score, earlier feature)."""
    return {
        "conversation": conv,
        "gold": gold,
        "cands": [{"target": t, "score": s, "features": {"earlier": e}} for t, s, e in cands],
    }


GRID = {"earlier": (0.0, 0.1)}


def test_features_read_the_messages(cv) -> None:
    f = cv.features([0.2, 0.6, 0.5, 0.1], [0, 2, 3, 1], position=4, top_position=9)
    assert f["best"] == 0.6
    assert f["adjacent"] == 0.5  # the better neighbour of the best message
    assert f["focus"] == pytest.approx(1.0986, abs=1e-4)  # log(1 + 2): two hold 2+ words
    assert f["earlier"] == 1.0
    assert cv.features([], [], 1, 1) == dict.fromkeys(cv.FEATURES, 0.0)


def test_a_rule_that_holds_everywhere_survives_leave_one_out(cv) -> None:
    rows = [_row(c, 1, [(2, 1.0, 0.0), (1, 0.95, 1.0)]) for c in ("a", "b", "c")]
    assert cv.hits(rows, {}) == 0
    folds = cv.leave_one_out(rows, GRID)
    assert [got for _, _, _, got, _ in folds] == [1, 1, 1]


def test_a_rule_fitted_on_one_conversation_does_not_count(cv) -> None:
    # Conversation "a" gains from preferring the earlier chat; "b" and "c" lose by it.
    rows = [
        _row("a", 1, [(2, 1.0, 0.0), (1, 0.95, 1.0)]),
        _row("a", 1, [(2, 1.0, 0.0), (1, 0.95, 1.0)]),
        _row("b", 2, [(2, 1.0, 0.0), (1, 0.95, 1.0)]),
        _row("c", 2, [(2, 1.0, 0.0), (1, 0.95, 1.0)]),
    ]
    assert cv.hits(rows, cv.fit(rows, GRID)) == 2  # in sample: a tie, the smaller weight
    # Left out, each conversation gets the weights the other two prefer, which are wrong
    # for it: the cross-validated count falls below the reranker's.
    folds = {conv: got for conv, _, _, got, _ in cv.leave_one_out(rows, GRID)}
    assert folds == {"a": 0, "b": 0, "c": 0}
    assert "leave one conversation out: 0 against the reranker's 2" in cv.report(rows, GRID)


def test_held_out_files_are_refused(cv, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        cv.main([str(tmp_path / "locomo_v3_heldout.jsonl")])
