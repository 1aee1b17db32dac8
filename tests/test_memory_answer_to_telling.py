"""A forget-from cut at turn level (chronomem/resolve.py: answer_to_telling): when the
best message answers the other speaker's question about what the same speaker told just
before, the event began at that telling, and the cut moves back to it."""

from __future__ import annotations

import pytest

from chronomem import ChronoMem
from tests._memory_fixtures import hash_store

# the neighbour lookup is SQL: run on both backends
pytestmark = pytest.mark.usefixtures("each_backend")

# Jim's answer holds more of the request's words ("Cyberpunk"), so retrieval ranks it first.
TURNS = [
    (1, "[1:00 pm on 3 May, 2023] Kim: I painted the fence over the weekend"),
    (1, "[1:00 pm on 3 May, 2023] Jim: nice! I got this cool video card last week"),
    (1, "[1:00 pm on 3 May, 2023] Kim: Cool! What games will you play on it?"),
    (1, "[1:00 pm on 3 May, 2023] Jim: RPGs, this video card runs Cyberpunk so well"),
    (2, "[2:00 pm on 9 May, 2023] Kim: we adopted a cat called Miso"),
]


def _store() -> tuple[ChronoMem, list[int]]:
    mem = hash_store()
    vids = [
        mem.commit("a", "u", [{"op": "add", "item_id": f"t{i}", "text": t}], source="chat",
                   reason="t", labels={"session": s})
        for i, (s, t) in enumerate(TURNS)
    ]  # fmt: skip
    return mem, vids


def test_forget_from_an_answer_moves_back_to_the_telling() -> None:
    mem, vids = _store()
    with mem:
        query = "James's new video card for playing Cyberpunk - forget from there"
        query = query.replace("James's", "Jim's")
        plan = mem.rollback_to_version_by_nl_query("a", "u", query, preview=True)
        assert plan.evidence["steps"]["telling"] == {"telling": vids[1], "from": vids[3]}
        assert plan.target_version == vids[0]


def test_keep_up_to_and_a_named_chat_do_not_move() -> None:
    mem, vids = _store()
    with mem:
        plan = mem.rollback_to_version_by_nl_query(
            "a", "u", "keep up to Jim's video card for playing Cyberpunk", preview=True
        )
        assert "telling" not in plan.evidence.get("steps", {})
        plan = mem.rollback_to_version_by_nl_query(
            "a", "u", "forget the chat about Jim's video card and Cyberpunk", preview=True
        )
        assert "telling" not in plan.evidence.get("steps", {})
