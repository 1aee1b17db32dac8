"""An ordinal at turn level (chronomem/operators.py): "when pottery first came up" names
the mention, so the cut falls at its message; "the first chat about pottery" names a
chat, so the cut falls at that chat's edge."""

from __future__ import annotations

import pytest

from chronomem import ChronoMem
from tests._memory_fixtures import hash_store

TURNS = [
    (1, "1:00 pm on 3 May, 2023", "Ann: hello Bob, how was the week"),
    (1, "1:00 pm on 3 May, 2023", "Ann: I started a pottery class on Tuesdays"),
    (1, "1:00 pm on 3 May, 2023", "Bob: nice, have fun at the wheel"),
    (1, "1:00 pm on 3 May, 2023", "Ann: see you soon"),
    (2, "2:00 pm on 9 May, 2023", "Ann: my pottery bowl came out of the kiln today"),
    (2, "2:00 pm on 9 May, 2023", "Bob: it looks great"),
]


@pytest.fixture(scope="module")
def turns():
    mem = hash_store()
    vids = [
        mem.commit("a", "u", [{"op": "add", "item_id": f"t{i}", "text": t}], source="chat",
                   reason="t", labels={"session": s}, valid_time=day)
        for i, (s, day, t) in enumerate(TURNS)
    ]  # fmt: skip
    yield mem, vids
    mem.close()


def _target(mem: ChronoMem, query: str) -> int:
    return mem.rollback_to_version_by_nl_query("a", "u", query, preview=True).target_version


def test_a_first_mention_cuts_at_its_message(turns) -> None:
    mem, vids = turns
    assert _target(mem, "keep everything up to when pottery first came up") == vids[1]
    assert _target(mem, "undo everything from when Ann first mentioned pottery") == vids[0]


def test_a_first_chat_cuts_at_the_chat_edge(turns) -> None:
    mem, vids = turns
    assert _target(mem, "keep everything up to the first chat about pottery") == vids[3]
