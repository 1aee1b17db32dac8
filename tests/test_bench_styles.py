"""``bench styles``: the per-style tables from per-request rows (no store, no model)."""

from __future__ import annotations

import pytest

from chronobench.bench.styles import rollback_table, selective_table, set_path


def _row(stream: str, style: str, ranked: list[int], gold: int, **kw: object) -> dict:
    return {"stream": stream, "style": style, "request": "x", "expect": "act", "gold": gold,
            "ranked": ranked, "refused": False, "plan_hit": ranked[:1] == [gold], **kw}  # fmt: skip


def test_rollback_table_by_style_with_refusals() -> None:
    rows = [
        _row("a", "offset", [3, 4], 3),
        _row("b", "offset", [5, 3], 3),
        _row("a", "negation", [], 2, refused=True),
        _row("a", "absent", [], 9, expect="refuse", refused=True, selective_refused=False),
        _row("b", "absent", [1], 9, expect="refuse", refused=False, selective_refused=True),
    ]
    lines = rollback_table(rows)
    offset = next(x for x in lines if x.startswith("offset"))
    assert offset.split()[1] == "2" and " 50.0 [" in offset and "100.0 [100.0, 100.0]" in offset
    negation = next(x for x in lines if x.startswith("negation"))
    assert "100.0%" in negation  # refused by the gate
    absent = next(x for x in lines if x.startswith("absent"))
    assert absent.split()[1:] == ["2", "50.0%", "50.0%", "50.0%"]
    assert sum(x.startswith("all") for x in lines) == 2  # one per table


def test_selective_table_counts_gold_turns() -> None:
    rows = [
        {"stream": "a", "style": "terse", "request": "x", "gold": [4], "removed": [4],
         "refused": False},
        {"stream": "b", "style": "terse", "request": "y", "gold": [7], "removed": [7, 8],
         "refused": False},
        {"stream": "b", "style": "typo", "request": "z", "gold": [2], "removed": [],
         "refused": True},
    ]  # fmt: skip
    lines = selective_table(rows)
    terse = next(x for x in lines if x.startswith("terse"))
    assert "100.0%" in terse and "50.0%" in terse and terse.endswith(" 75.0")
    typo = next(x for x in lines if x.startswith("typo"))
    assert "  0.0%" in typo and typo.endswith("-")


def test_set_path_names_the_shipped_sets() -> None:
    assert set_path("locomo_nl_session_heldout").name == "locomo_nl_session_heldout.jsonl"
    with pytest.raises(SystemExit, match="locomo_nl_turn_heldout"):
        set_path("no_such_set")
