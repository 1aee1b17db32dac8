"""Wording an outside writer uses: a request wrapped in small talk, misspelt content words
read back against the store's own vocabulary, and the scope words of a request
("to the end of X", "everything from X", a misspelt "everything").

The phrasings here were written for these tests; none is a line of a request file."""

from __future__ import annotations

import pytest

from chronomem import UncertainRequestError, cues
from chronomem import parse as ps
from tests._memory_fixtures import APP, USER, chat_store

# One write per session (hash embedder: only the lexical stage carries meaning).
SESSIONS = [
    "Melanie signed up for a pottery class with the kids at the studio",
    "Caroline researched adoption agencies for her family plans",
    "Melanie finished a pottery bowl with a black flower pattern",
    "Caroline marched in the pride parade downtown with friends",
    "Melanie took the kids camping in the mountains by the lake",
    "Caroline started a new job shelving books at the library",
    "Caroline adopted a guinea pig named Oscar from the shelter",
]


@pytest.fixture(scope="module")
def store():
    mem, vids = chat_store(SESSIONS)
    yield mem, vids
    mem.close()


# -- small talk around the request ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kept", "dropped"),
    [
        (
            "Rough morning, the bus never came and I missed my stand-up. Anyway: please "
            "undo the chat where Priya told me about her kayak trip. Cheers!",
            "kayak",
            "bus",
        ),
        (
            "Good news, my sister passed her driving test! Could you forget the "
            "conversation about the violin lessons? Thanks so much, you're brilliant.",
            "violin",
            "driving",
        ),
        (
            "Quick one while the kettle boils: wipe the talk where Omar described his "
            "allotment. The weather here is lovely.",
            "allotment",
            "kettle",
        ),
    ],
)
def test_small_talk_sentences_leave_the_content_clause(text, kept, dropped) -> None:
    clause = ps.parse(text).clause
    assert kept in clause and dropped not in clause, clause


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # the asking sentence names nothing itself: the content is in the other one
        ("not the pottery class, the camping weekend. undo from that chat", "camping"),
        ("not the bowl, rather the plate she glazed. forget that one and later", "plate"),
        ("The second time we talked about her garden. Scrap that one and after.", "garden"),
    ],
)
def test_a_request_whose_asking_sentence_names_nothing_is_kept_whole(text, kept) -> None:
    clause = ps.parse(text).clause
    assert kept in clause and text.split(". ")[1][:8] in clause, clause


@pytest.mark.parametrize(
    "text",
    [
        "Thanks for hearing me out. Please undo what I said and move along.",
        "Cheers for the chat earlier! Let's forget what I said and carry on.",
    ],
)
def test_an_asking_sentence_with_one_word_keeps_its_small_talk(store, text) -> None:
    """One content word may be an idiom ("move along"): the message is read whole, and
    the no-content gates see what they saw before."""
    if "carry on" in text:
        assert ps.parse(text).clause == text
    mem, _ = store
    with pytest.raises(UncertainRequestError):
        mem.plan_rollback_by_nl_query(APP, USER, text)


def test_a_sentence_that_names_an_offset_or_order_stays() -> None:
    p = ps.parse(
        "Busy day at work. Please roll back to the chat where Lena showed me her quilt. "
        "Nothing after that should stay."
    )
    assert "Nothing after that" in p.clause
    p = ps.parse("It was three days after the hike. Undo that chat about the blisters, please.")
    assert p.operators and p.operators[0].kind == "offset", p.describe()


def test_small_talk_sharing_words_with_the_memory_no_longer_pulls_the_match(store) -> None:
    mem, vids = store
    text = (
        "The kids and I did pottery all weekend, what a mess. Anyway, please roll back to "
        "before the chat where Caroline marched downtown."
    )
    got = mem.resolve(APP, USER, text, k=3)
    assert got[0][0] == vids[2], got


# -- the request's scope words ------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "take me back to the end of our talk about the library job",
        "revert until the end of the conversation where Caroline adopted Oscar",
        "roll things back to the very end of the camping chat, drop what came after",
    ],
)
def test_to_the_end_of_a_chat_keeps_the_chat(text) -> None:
    assert ps.parse(text).intent == "restore_to"


@pytest.mark.parametrize(
    "text",
    [
        "roll back everything from when Caroline started the library job",
        "revert anything from the pottery bowl chat",
        "pls roll bak evrything frm the camping trip",
    ],
)
def test_everything_from_an_event_is_an_undo(text) -> None:
    assert ps.parse(text).intent == "undo", ps.parse(text).describe()


@pytest.mark.parametrize(
    ("word", "now"),
    [("evrything", "everything"), ("everythng", "everything"), ("anythin", "anything")],
)
def test_a_misspelt_everything_is_respelt(word, now) -> None:
    normal, changed = cues.respell(f"please undo {word} since the move")
    assert (word, now) in changed and now in normal


def test_near_spellings_are_one_slip_away() -> None:
    near = cues.near_spellings("runnin")
    assert near[0] == "running" and "rnunin" in near and "urnnin" not in near
    assert "runin" not in near and "runnin" not in near and len(near) == len(set(near))
    assert cues.near_spellings("neighbour") == ["neighbor"]


@pytest.mark.skipif(not cues.english_words(), reason="the packaged MiniLM word list")
def test_a_real_word_is_no_slip() -> None:
    for word in ("bother", "wedding", "died", "cabin"):
        assert cues.near_spellings(word) == [], word
    assert "friends" in cues.near_spellings("frends")


# -- misspelt content words read against the store ----------------------------------------


@pytest.mark.parametrize(
    ("text", "session"),
    [
        ("plz undo evrything since caroline adoptd the guinea pig", 6),
        ("go back to before melanie made that potery bowl", 2),
        ("can u forget the chat about the libary job n everything after", 5),
    ],
)
def test_misspelt_content_words_are_read_back_to_the_memory_words(store, text, session) -> None:
    mem, vids = store
    got = mem.resolve(APP, USER, text, k=3)
    assert got[0][0] == vids[session - 1], got
    plan = mem.plan_rollback_by_nl_query(APP, USER, text)
    assert plan.target_version == vids[session - 1]


def test_a_word_the_memory_holds_is_never_respelt(store) -> None:
    mem, _ = store
    plan = mem.plan_rollback_by_nl_query(APP, USER, "undo the chat about the pride parade")
    assert not plan.evidence["parse"].get("respelt"), plan.evidence["parse"]


@pytest.mark.parametrize(
    "text",
    ["forget my surfng lessons in Hawaii", "undo the chat about the snowbord trip to Japan"],
)
def test_a_misspelt_word_with_no_near_word_in_the_memory_is_still_refused(store, text) -> None:
    mem, _ = store
    with pytest.raises(UncertainRequestError):
        mem.plan_rollback_by_nl_query(APP, USER, text)
