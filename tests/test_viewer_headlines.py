"""The viewer's first screen: a strip per question (best system, best floor, gap,
whether the intervals overlap) and RQ4 beside RQ1-RQ3, on the published runs."""

from __future__ import annotations

import re

from chronobench.viewer.summary import Row, Stat, headline_strip
from tests.conftest import REPO_ROOT


def _row(label: str, mean: float, low: float, high: float, **kw: bool) -> Row:
    return Row("Q", label, Stat(mean, low, high, 10), **kw)


def test_the_strip_puts_the_best_system_against_the_best_floor():
    rows = [
        _row("oracle", 99.0, 98.0, 100.0, is_oracle=True),
        _row("mine", 70.0, 60.0, 80.0),
        _row("theirs", 50.0, 40.0, 55.0),
        _row("floor: a", 20.0, 10.0, 30.0, is_floor=True),
        _row("floor: b", 65.0, 55.0, 75.0, is_floor=True),
    ]
    (strip,) = headline_strip(rows)
    assert strip.best.label == "mine"  # the oracle is a ceiling, not a contender
    assert strip.other is not None and strip.other.label == "floor: b"
    assert strip.other_kind == "floor" and strip.gap == 5.0 and strip.overlap is True
    (apart,) = headline_strip([r for r in rows if r.label != "floor: b"])
    assert apart.other.label == "floor: a" and apart.overlap is False


def test_a_question_without_floors_shows_its_runner_up():
    (strip,) = headline_strip([_row("a", 50.0, 45.0, 55.0), _row("b", 40.0, 30.0, 44.0)])
    assert strip.other_kind == "runner-up" and strip.other.label == "b"
    assert strip.overlap is False


def test_the_published_board_gives_every_question_a_strip_and_rq4_a_section():
    from chronobench.viewer.collect import builds, collect
    from chronobench.viewer.summary import headline_rows

    full = [b for b in builds(collect(REPO_ROOT / "results")) if b.dataset == "locomo"]
    full = [b for b in full if not b.fixture]
    assert full, "no published LoCoMo build"
    rows = headline_rows(full[0])
    strips = {s.section: s for s in headline_strip(rows)}
    board = (REPO_ROOT / "results" / "LEADERBOARD.md").read_text()
    rq4 = strips["RQ4 selective forgetting (held-out)"]
    assert rq4.best.label.startswith("ChronoMem selective undo")
    assert rq4.other_kind == "floor" and rq4.best.stat.text() in board
    rq2 = strips["RQ2 RC-QA"]
    assert rq2.best.label == "ChronoMem" and rq2.overlap is False
    assert rq2.other.stat.text() in board


def test_axes_end_just_above_the_data():
    from chronobench.viewer.svg import Bar, axis_top, interval_bars

    assert axis_top([3.6, 15.8, 17.9]) == 20.0
    assert axis_top([None, 22.4]) == 25.0
    assert axis_top([74.5, 84.3]) == 100.0
    assert axis_top([]) == 10.0 and axis_top([130.0]) == 140.0
    svg = interval_bars("RQ3", [Bar("ChronoMem", 15.8, 12.3, 20.2, floor=False)])
    ticks = [int(x) for x in re.findall(r'fill="#555">(\d+)</text>', svg)]
    assert ticks[-1] == 25 and ticks[1] == 5


def test_the_strip_links_each_question_to_its_definition():
    from chronobench.viewer.site import DEFINITIONS, strip_table

    rows = [
        Row("RQ2 RC-QA", "ChronoMem", Stat(74.5, 69.9, 79.0, 10)),
        Row("RQ2 RC-QA", "floor: x", Stat(23.0, 17.5, 28.9, 10), is_floor=True),
    ]
    html = strip_table(rows)
    anchor = DEFINITIONS["RQ2"][0]
    assert f'href="#{anchor}"' in html and "apart" in html and "+51.5" in html
