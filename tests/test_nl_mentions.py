"""Counting the times a topic came up, at turn level (chronomem/operators.py: the
ordinal and knowledge-state requests over mentions).

Three readings, each with phrasings written for this test (none is a line of a request
set): the topic counted is the one before a describing "..., when ..." clause; a word
only in a bracketed aside (a shared photo's description) is no time the topic came up;
an undo cuts where the mention's chat first says the topic."""

from __future__ import annotations

import pytest

from chronomem import ChronoMem
from chronomem.operators import counted_topic
from chronomem.parse import parse
from chronomem.turncut import spoken
from tests._memory_fixtures import hash_store

# the episode and mention lookups are SQL: run on both backends
pytestmark = pytest.mark.usefixtures("each_backend")


def _store(turns: list[tuple[int, str]]) -> tuple[ChronoMem, list[int]]:
    mem = hash_store()
    vids = [
        mem.commit("a", "u", [{"op": "add", "item_id": f"t{i}", "text": t}], source="chat",
                   reason="t", labels={"session": s})
        for i, (s, t) in enumerate(turns)
    ]  # fmt: skip
    return mem, vids


def _target(mem: ChronoMem, query: str) -> int:
    return mem.rollback_to_version_by_nl_query("a", "u", query, preview=True).target_version


# Kayaking comes up in chats 1 to 5; "finished" in chats 2, 3 and 4. The third time
# kayaking came up is chat 3 (turn 4), which also says "finished".
KAYAK = [
    (1, "Ann: I tried kayaking on the lake for the first time"),
    (1, "Bob: sounds like fun"),
    (2, "Ann: I finished the quilt for my niece"),
    (2, "Ann: also went kayaking again, my arms are sore"),
    (3, "Ann: I finished my kayaking lessons today"),
    (3, "Bob: congrats, well done"),
    (4, "Ann: finished reading that novel you lent me"),
    (4, "Bob: kayaking this weekend?"),
    (5, "Ann: kayaking trip to the fjord is booked"),
]


@pytest.mark.parametrize(
    "query",
    [
        "undo from the third time kayaking came up, when Ann said she had finished",
        "roll back to before the third time we talked about kayaking - when Ann finished",
        "go back to just before the third time kayaking was mentioned, where Ann finished",
    ],
)
def test_the_count_is_of_the_topic_before_a_describing_clause(query: str) -> None:
    mem, vids = _store(KAYAK)
    with mem:
        # counting "finished" would land on chat 4's novel
        assert _target(mem, query) == vids[3]


def test_counted_topic_reads_the_words_before_the_describing_clause() -> None:
    assert counted_topic("pottery, when Mel mentioned finishing another piece") == {"pottery"}
    assert counted_topic("the hike \u2014 when we got lost") == {"hike"}
    # no describing clause, or nothing before it: the whole clause is counted
    assert counted_topic("Dave's Mustang") == frozenset()
    assert counted_topic("undo, when he said it") == frozenset()


# The lighthouse is in chat 1's photo only; it is said in chats 2 and 3.
LIGHTHOUSE = [
    (1, "[2 May, 2023] Ann: look at my holiday snap! [shares a photo of a lighthouse on a cliff]"),
    (1, "[2 May, 2023] Bob: gorgeous colours"),
    (2, "[9 May, 2023] Ann: we climbed the old lighthouse today, 200 steps"),
    (2, "[9 May, 2023] Bob: wow, what a view that must be"),
    (3, "[20 May, 2023] Bob: my uncle kept a lighthouse for years"),
    (3, "[20 May, 2023] Ann: a lighthouse keeper, how romantic"),
]


@pytest.mark.parametrize(
    "query",
    [
        "undo from the second time the lighthouse came up",
        "take me back to before the second time we talked about a lighthouse",
    ],
)
def test_a_photo_description_is_no_time_the_topic_came_up(query: str) -> None:
    mem, vids = _store(LIGHTHOUSE)
    with mem:
        assert _target(mem, query) == vids[3]


def test_a_topic_only_ever_shown_is_counted_where_it_was_shown() -> None:
    turns = [
        (1, "Ann: back from the coast"),
        (1, "Bob: welcome back"),
        (2, "Ann: here you go [shares a photo of a lighthouse on a cliff]"),
        (2, "Bob: nice"),
    ]
    mem, vids = _store(turns)
    with mem:
        assert _target(mem, "undo from the first time the lighthouse came up") == vids[1]


CAKE = [
    (1, "Bob: almond flour is pricey these days"),
    (1, "Ann: there is almond flour everywhere in my kitchen"),
    (2, "Ann: I baked an almond flour cheesecake [shares a photo of a cheese cake on a plate]"),
    (2, "Bob: yum"),
    (3, "Bob: the cheese cake recipe you sent me went viral"),
    (3, "Ann: ha, told you"),
]


@pytest.mark.parametrize(
    "query",
    [
        "go back to before you knew Ann bakes almond flour cheese cake",
        "undo from the first time the almond flour cheese cake came up",
    ],
)
def test_a_photo_counts_when_its_words_are_spoken_of_in_other_words(query: str) -> None:
    # chat 2's line writes "cheesecake" as one word, the request and its photo as two
    mem, vids = _store(CAKE)
    with mem:
        assert _target(mem, query) == vids[1]


def test_spoken_drops_the_bracketed_asides() -> None:
    line = "add: [2 May, 2023] Ann: look! [shares a photo of a lighthouse]"
    assert "lighthouse" not in spoken(line)
    assert "look" in spoken(line)


# Miso comes up first in chat 2: Ann tells it, and Bob's reply dwells on it with more of
# the request's words (the name keys the mentions: the other words are about other cats
# and plants, and Ann's name is in every line).
MISO = [
    (1, "Ann: the garden is finally blooming, though the basil died"),
    (1, "Bob: Ann, the neighbour's cat dug up my tulips again"),
    (2, "Ann: sad week, we had to say goodbye to Miso"),
    (2, "Bob: so sorry Ann, Miso the cat died? she was such a sweet old cat"),
    (3, "Bob: a stray cat sleeps on my porch now, Ann"),
    (3, "Ann: thanks, we planted a rose for Miso"),
]


@pytest.mark.parametrize(
    "query",
    [
        "undo to before you heard from Ann that Miso the cat died",
        "go back to before Ann first told you Miso the cat had died",
    ],
)
def test_an_undo_cuts_where_the_named_speaker_told_it(query: str) -> None:
    mem, vids = _store(MISO)
    with mem:
        assert _target(mem, query) == vids[1]


def test_the_cut_stays_at_the_mention_without_a_named_teller() -> None:
    # Bob's reply holds the name too: with nobody named, nothing says Ann's line told it
    mem, vids = _store(MISO)
    with mem:
        assert _target(mem, "go back to before you knew Miso the cat had died") == vids[2]
        # a restore keeps through the best-matched mention
        assert _target(mem, "restore to the first time you heard Miso the cat died") == vids[3]


# -- the wordings of a first mention ------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "make it as if you'd never known Ann bought a canoe, go back to just before that",
        "undo everything, like you never heard that Ann bought a canoe",
        "roll back as though I had never learned Ann bought a canoe",
        "make it so you never heard about Ann's canoe",
        "rewind to when Ann's new canoe was still news to you",
        "back to when you still had no idea Ann bought a canoe",
    ],
)
def test_never_having_heard_is_a_state_of_knowledge(query: str) -> None:
    p = parse(query)
    assert p.knowledge and p.intent == "undo"
    assert [(o.kind, o.n) for o in p.operators] == [("ordinal", 1)]
    assert "never" not in p.clause and "canoe" in p.clause


@pytest.mark.parametrize(
    ("query", "verb"),
    [
        ("undo from when Bob first let on he was moving to Leeds", "let on"),
        ("roll back to before Bob first opened up about the move to Leeds", "opened up about"),
        ("go back to before Bob first admitted he was moving to Leeds", "admitted"),
        ("undo from when Bob first let slip that he was moving", "let slip"),
    ],
)
def test_a_verb_of_disclosing_after_first_counts_mentions(query: str, verb: str) -> None:
    p = parse(query)
    assert [(o.kind, o.n) for o in p.operators] == [("ordinal", 1)]
    # the verb names no content: it goes with its adverb
    assert verb not in p.clause and "mov" in p.clause


def test_a_disclosing_verb_without_first_stays_content() -> None:
    p = parse("undo the chat where Bob announced his engagement")
    assert not p.operators and "announced" in p.clause
