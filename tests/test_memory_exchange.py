"""The exchange edge at turn level (chronomem/exchange.py): an event told over a message
and the reply that takes it up is kept or forgotten whole, and a reply that only picks
up a word of it is not part of it."""

from __future__ import annotations

import pytest

from chronomem import ChronoMem
from tests._memory_fixtures import hash_store

# the neighbour lookup is SQL: run on both backends
pytestmark = pytest.mark.usefixtures("each_backend")

TURNS = [
    (1, "[1:00 pm on 3 May, 2023] Ann: hello Bob, how was your week?"),
    (1, "[1:00 pm on 3 May, 2023] Ann: we took the dogs kayaking on the lake last weekend"),
    (1, "[1:00 pm on 3 May, 2023] Bob: kayaking on a lake sounds like so much fun"),
    (1, "[1:00 pm on 3 May, 2023] Ann: it was, and then we had a long lunch"),
    (2, "[2:00 pm on 9 May, 2023] Bob: any tips for sourdough bread?"),
    (2, "[2:00 pm on 9 May, 2023] Ann: I bake sourdough bread with rye flour every week"),
    (2, "[2:00 pm on 9 May, 2023] Bob: rye, nice, see you soon"),
    (3, "[3:00 pm on 20 May, 2023] Bob: we are moving to Bergen next spring"),
]


def _store(**kw) -> tuple[ChronoMem, list[int]]:
    mem = hash_store(**kw)
    vids = [
        mem.commit("a", "u", [{"op": "add", "item_id": f"t{i}", "text": t}], source="chat",
                   reason="t", labels={"session": s})
        for i, (s, t) in enumerate(TURNS)
    ]  # fmt: skip
    return mem, vids


def test_keeping_an_event_keeps_the_reply_that_takes_it_up() -> None:
    mem, vids = _store()
    with mem:
        query = "keep up to the kayaking weekend on the lake with the dogs"
        assert mem.resolve("a", "u", query)[0][0] == vids[2]
        plan = mem.rollback_to_version_by_nl_query("a", "u", query, preview=True)
        assert plan.target_version == vids[2]
        # the gates read the message retrieval matched; the step is shown
        assert plan.evidence["steps"]["exchange"] == {"exchange": vids[2], "from": vids[1]}
        assert plan.evidence["steps"]["event"] == vids[1]


def test_forgetting_an_event_forgets_the_question_that_opened_it() -> None:
    mem, vids = _store()
    with mem:
        query = "forget everything from the sourdough bread with rye flour"
        # undo restores to just before Bob's question, which the answer takes up
        assert mem.resolve("a", "u", query)[0][0] == vids[3]


def test_a_reply_that_picks_up_one_word_or_another_chat_is_not_moved_onto() -> None:
    mem, vids = _store()
    with mem:
        # Bob's "rye, nice" repeats one of four words the answer holds
        query = "keep up to the sourdough bread with rye flour"
        assert mem.resolve("a", "u", query)[0][0] == vids[5]
        # the next message is another chat
        query = "keep up to the news about moving to Bergen"
        assert mem.resolve("a", "u", query)[0][0] == vids[7]
    # without episodes the edge is off (a neighbour could be another conversation)
    mem, vids = _store(episode_label=None)
    with mem:
        query = "keep up to the kayaking weekend on the lake with the dogs"
        assert mem.resolve("a", "u", query)[0][0] == vids[1]
