"""Requests that name a time resolve against the writes' timestamps (last write = "now")."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from chronomem import dates
from chronomem import timeref as tr
from tests._memory_fixtures import APP, USER, add, hash_store

# One write per "session", LoCoMo-style stamps; now = 23 Jul 2023 (a Sunday).
DAYS = ["8 May, 2023", "25 May, 2023", "9 June, 2023", "3 July, 2023", "17 July, 2023",
        "21 July, 2023", "23 July, 2023"]  # fmt: skip
TOPICS = ["pottery class", "camping trip", "adoption agency", "painting a sunset",
          "a charity race", "the new puppy", "a book club"]  # fmt: skip


def _store():
    mem = hash_store()
    vids = [
        mem.commit(APP, USER, [add(f"s{i}", f"We talked about {t}")], source="chat",
                   reason="t", valid_time=f"1:56 pm on {d}")
        for i, (t, d) in enumerate(zip(TOPICS, DAYS, strict=True))
    ]  # fmt: skip
    return mem, vids


@pytest.mark.parametrize(
    ("query", "kept"),
    [
        ("undo everything since 1 July", 3),
        ("Everything after 25 May can go", 2),
        ("forget everything from June onwards", 2),
        ("keep only what you had by the end of June", 3),
        ("undo everything since last Monday", 4),  # Mon 17 Jul: that day's write goes
        ("wipe the last two weeks", 4),  # before 9 Jul
        ("forget whatever you picked up in the past month", 3),  # before 23 Jun
        ("the 3 July chat and everything after it", 3),
        ("go back to right after our chat on 3 July", 4),
        ("keep everything before Independence Day", 4),
        ("keep only May", 2),
    ],
)
def test_date_bounds_pick_the_version_by_timestamp(query: str, kept: int) -> None:
    mem, vids = _store()
    got = mem.resolve(APP, USER, query, k=3)
    assert got[0][0] == vids[kept - 1]
    plan = mem.plan_rollback_by_nl_query(APP, USER, query)
    assert plan.target_version == vids[kept - 1] and plan.confidence == 1.0


def test_month_narrows_an_event_request() -> None:
    mem, vids = _store()
    mem.commit(APP, USER, [add("x", "We talked about the camping trip again")], source="chat",
               reason="t", valid_time="1:00 pm on 23 July, 2023")  # fmt: skip
    got = mem.resolve(APP, USER, "forget the camping trip in May and everything after", k=3)
    assert got[0][0] == vids[0]  # the parent of the May camping write


@pytest.mark.parametrize(
    "query",
    [
        "undo the chat about a car he found last week",  # the event's own time
        "you may forget the pottery class",  # "may" is a verb
        "undo the conversation about the march for equality",
        "forget the adoption agency and everything after",
    ],
)
def test_no_bound_where_no_time_is_named(query: str) -> None:
    ref = tr.read(query)
    assert ref is None or ref.kind == "month"


def test_stamps_and_no_dates() -> None:
    assert tr.parse_stamp("1:56 pm on 8 May, 2023") == date(2023, 5, 8)
    assert tr.parse_stamp("2024-01-02T10:00:00Z") == date(2024, 1, 2)
    assert tr.parse_stamp("soon") is None
    assert dates.parse_moment("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert dates.parse_moment("12:05 am on 1 June, 2023") == datetime(2023, 6, 1, 0, 5, tzinfo=UTC)
    assert dates.parse_moment("2024-01-02T10:00:07Z") == datetime(2024, 1, 2, 10, 0, 7, tzinfo=UTC)
    assert dates.parse_moment("8 May, 2023") == datetime(2023, 5, 8, tzinfo=UTC)
    assert dates.parse_moment("soon") is None
    mem = hash_store()
    v = [mem.commit(APP, USER, [add(f"i{i}", t)], source="c", reason="t")
         for i, t in enumerate(["pottery class", "camping trip"])]  # fmt: skip
    # Undated writes: a time-naming request falls back to the content stages.
    assert mem.resolve(APP, USER, "undo the camping trip since 1 July", k=1)[0][0] == v[0]
