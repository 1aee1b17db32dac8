"""The speaker cue at turn level (chronomem/turncut.py: speaker_turn): a request that
names who said something lands on that speaker's message, not on the reply beside it
that repeats its words."""

from __future__ import annotations

import pytest

from chronomem import ChronoMem
from chronomem.turncut import speaker_of
from tests._memory_fixtures import hash_store

# the neighbour lookup is SQL: run on both backends
pytestmark = pytest.mark.usefixtures("each_backend")

# Bob's reply repeats Ann's suggestion with more of the request's words ("team trip"),
# so retrieval ranks the reply first.
TURNS = [
    (1, "[1:00 pm on 3 May, 2023] Ann: I started a pottery class on Tuesdays"),
    (1, "[1:00 pm on 3 May, 2023] Bob: nice, have fun"),
    (2, "[2:00 pm on 9 May, 2023] Bob: where should my team go on our trip?"),
    (2, "[2:00 pm on 9 May, 2023] Ann: how about Edinburgh, it is lovely in May"),
    (2, "[2:00 pm on 9 May, 2023] Bob: Edinburgh for the team trip, great idea"),
    (3, "[3:00 pm on 20 May, 2023] Ann: we are moving to Bergen next spring"),
]


def _store(**kw) -> tuple[ChronoMem, list[int]]:
    mem = hash_store(**kw)
    vids = [
        mem.commit("a", "u", [{"op": "add", "item_id": f"t{i}", "text": t}], source="chat",
                   reason="t", labels={"session": s})
        for i, (s, t) in enumerate(TURNS)
    ]  # fmt: skip
    return mem, vids


def test_speaker_of_reads_a_transcript_line() -> None:
    assert speaker_of("add: [2:00 pm on 9 May, 2023] Ann: Edinburgh is lovely") == "Ann"
    assert speaker_of("Bob: hi") == "Bob"
    assert speaker_of("add: the meeting: noon") is None
    assert speaker_of("") is None


def test_a_named_speaker_moves_the_match_onto_their_message() -> None:
    mem, vids = _store()
    with mem:
        query = "keep everything up to when Ann suggested Edinburgh for the team trip"
        assert mem.resolve("a", "u", query)[0][0] == vids[3]
        plan = mem.rollback_to_version_by_nl_query("a", "u", query, preview=True)
        # the gates read the message retrieval matched; the step is shown
        assert plan.target_version == vids[3]
        assert plan.evidence["steps"]["speaker"] == {"speaker": "Ann", "from": vids[4]}


def test_no_move_without_one_named_speaker_or_across_episodes() -> None:
    mem, vids = _store()
    with mem:
        # the reply's own speaker named: it stays
        query = "keep everything up to when Bob said Edinburgh was a great idea for the trip"
        assert mem.resolve("a", "u", query)[0][0] == vids[4]
        # nobody named: retrieval's order stands
        query = "keep everything up to when you suggested Edinburgh for the team trip"
        assert mem.resolve("a", "u", query)[0][0] == vids[4]
        plan = mem.rollback_to_version_by_nl_query("a", "u", query, preview=True)
        assert "steps" not in plan.evidence
    # without episodes the cue is off (a neighbour could be another conversation)
    mem, vids = _store(episode_label=None)
    with mem:
        query = "keep everything up to when Ann suggested Edinburgh for the team trip"
        assert mem.resolve("a", "u", query)[0][0] == vids[4]
