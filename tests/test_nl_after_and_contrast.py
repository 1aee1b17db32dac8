"""What comes after an event, and contrasts that pass over a mention: "delete everything
after the chat where X" keeps X; "keep it all up 2 that chat" is "up to"; a ruled-out
clause ends at a dash ("not the one where X -- the one where Y"); a pro-form refers back
only after the ruled-out clause; "not the first time, the time it happened again" is the
second mention; "before <a long title> ever came up" is the first mention.

The phrasings here were written for these tests; none is a line of a request file."""

from __future__ import annotations

import pytest

from chronomem import negation as ng
from chronomem import parse as ps
from chronomem import query as q
from tests._memory_fixtures import APP, USER, chat_store

SESSIONS = [
    "Ines said she lost her bike lock at the station",
    "Ravi told me he is reading The Left Hand of Darkness for his book club",
    "Ines said she lost her bike lock again, this time at the gym",
    "Ravi went to the lake and painted the sunset",
    "Ines went camping at the lake with her cousins",
]


@pytest.fixture(scope="module")
def store():
    mem, vids = chat_store(SESSIONS)
    yield mem, vids
    mem.close()


# -- what comes after X goes, X stays ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "delete everything after the chat where Ravi painted the sunset",
        "Ravi's book club pick: anything after that can go",
        "wipe whatever came after Ines lost her lock at the gym",
        "ravi painted at the lake.. toss everything AFTER that chat ok",
        "keep all of it up to the lake painting, ditch the rest",
    ],
)
def test_what_comes_after_an_event_goes_and_the_event_stays(text: str) -> None:
    assert q.detect_intent(ps.parse(text).normal) == "restore_to", ps.parse(text).describe()
    assert ps.parse(text).intent == "restore_to"


@pytest.mark.parametrize(
    "text",
    [
        "forget the lake chat and everything after it",
        "remove the book club chat, plus anything after",
        "forget the chat where Ines lost her lock, everything after it too",
        "drop that talk and whatever came after",
    ],
)
def test_the_event_and_what_follows_it_both_go(text: str) -> None:
    assert ps.parse(text).intent == "undo", ps.parse(text).describe()


# -- "2" typed for "to" ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("keep evrything up 2 that chat", "up to that chat"),
        ("go back 2 when ines went camping", "back to when"),
        ("undo the chat 2 days after the lake trip", "chat 2 days after"),
        ("forget the 2 chats about the lock", "the 2 chats"),
    ],
)
def test_a_2_for_to_before_a_determiner_only(text: str, normal: str) -> None:
    assert normal in ps.parse(text).normal, ps.parse(text).describe()


# -- contrasts --------------------------------------------------------------------------------


def test_a_ruled_out_clause_ends_at_a_dash() -> None:
    split = ng.split_negation(
        "Forget the lock chat. Not the one where she lost it at the station -- the one at "
        "the gym. That one onward"
    )
    assert split is not None
    meant, ruled_out = split
    assert "gym" in meant and "station" not in meant, split
    assert "station" in ruled_out and "gym" not in ruled_out, split


def test_a_pro_form_before_the_ruled_out_clause_is_the_shared_head() -> None:
    split = ng.split_negation(
        "Restore to the lake one -- not where Ines camped with her cousins, I mean where "
        "Ravi painted the sunset"
    )
    assert split is not None
    meant, _ = split
    assert "cousins" not in meant and "camped" not in meant, split
    assert "painted" in meant


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("restore to when Ines lost her lock -- not the first time, the time she lost it again", 2),
        ("undo the lock chat, not the first one but the next one", 2),
        ("forget the second time the lock came up", 2),
    ],
)
def test_a_ruled_out_ordinal_means_the_mention_after_it(text: str, n: int) -> None:
    p = ps.parse(text)
    assert p.operator("ordinal") is not None and p.operator("ordinal").n == n, p.describe()


def test_a_ruled_out_first_time_without_a_later_one_is_no_count() -> None:
    p = ps.parse("undo the chat where Ines said it was not the first time she lost a lock")
    assert p.operator("ordinal") is None, p.describe()


def test_the_mention_after_a_ruled_out_first_one(store) -> None:
    mem, vids = store
    plan = mem.plan_rollback_by_nl_query(
        APP,
        USER,
        "restore to when Ines lost her bike lock -- not the first time, the time she lost it again",
    )
    assert plan.matched_version == vids[2], plan.evidence


def test_before_a_long_title_ever_came_up_is_the_first_mention() -> None:
    p = ps.parse("go back to before The Left Hand of Darkness ever came up")
    assert p.operator("ordinal") is not None and p.operator("ordinal").n == 1, p.describe()
    assert p.intent == "undo"
    assert "Darkness" in p.clause


# -- small talk around a request in everyday verbs ------------------------------------------


@pytest.mark.parametrize(
    ("text", "kept", "dropped"),
    [
        (
            "Finally fixed the leaky tap today. Oh and while I'm at it: could you scrub "
            "everything from when Ravi said he joined a book club? Bye for now",
            "book club",
            "tap",
        ),
        (
            "Rough commute this morning. Anyway, can you drop everything from when Ines lost "
            "her lock at the gym? Thanks, heading out",
            "lock",
            "commute",
        ),
    ],
)
def test_everyday_erasure_verbs_ask(text: str, kept: str, dropped: str) -> None:
    clause = ps.parse(text).clause
    assert kept in clause and dropped not in clause, clause


@pytest.mark.parametrize(
    ("text", "event"),
    [
        (
            "ravi painted the sunset at the lake... keep it all thru that msg n toss the rest",
            "sunset",
        ),
        (
            "I still laugh about Ines and her lost bike lock. Anyway, can you keep everything "
            "up to where she owned up to it and drop the rest?",
            "lock",
        ),
    ],
)
def test_a_sentence_the_request_points_back_at_stays(text: str, event: str) -> None:
    assert event in ps.parse(text).clause, ps.parse(text).describe()
