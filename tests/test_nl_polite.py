"""Courteous requests of several clauses: a sentence that goes on describing the event is
content (only the writer's own news is small talk), a request that lands on a chat keeps
that chat, and a self-correction may follow a full stop.

The phrasings here were written for these tests; none is a line of a request file."""

from __future__ import annotations

import pytest

from chronomem import parse as ps
from tests._memory_fixtures import APP, USER, add, chat_store, hash_store

# One write per session (hash embedder: only the lexical stage carries meaning).
SESSIONS = [
    "Priya told me about her kayak trip down the river with her cousins",
    "Omar described his allotment and the leeks he grows there",
    "Priya finished a quilt with a blue star pattern for her niece",
    "Omar ran a charity bake sale for the animal shelter downtown",
    "Priya hiked up to a waterfall and bought new hiking boots",
]


@pytest.fixture(scope="module")
def store():
    mem, vids = chat_store(SESSIONS)
    yield mem, vids
    mem.close()


# -- a sentence that describes the event stays ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (
            "Could you go back to the chat about Priya's hobby? The one with the star pattern.",
            "star",
        ),
        ("Please forget what Omar grows. The leeks and the allotment and all that.", "leeks"),
        (
            "Would you mind rewinding to our talk about Omar's fundraiser? It was the one "
            "where he baked for the shelter.",
            "baked",
        ),
        ("Undo the chat about the trip, please. That one with her cousins on the river.", "river"),
    ],
)
def test_a_sentence_describing_the_event_is_content(text: str, kept: str) -> None:
    assert kept in ps.parse(text).clause, ps.parse(text).describe()


@pytest.mark.parametrize(
    ("text", "dropped"),
    [
        ("Please undo the chat about the kayak trip. The rain hasn't stopped all week.", "rain"),
        ("Please undo the chat about the kayak trip. The kids loved the snow today.", "snow"),
        ("Please undo the chat about the kayak trip. That was a long week for me.", "week"),
        ("Please undo the chat about the kayak trip. My sister's visiting, so busy!", "sister"),
    ],
)
def test_the_writers_own_news_is_still_small_talk(text: str, dropped: str) -> None:
    assert dropped not in ps.parse(text).clause, ps.parse(text).describe()


def test_the_describing_sentence_picks_the_chat(store) -> None:
    mem, vids = store
    text = (
        "Could you take things back to the talk about Priya's craft? The one with the star pattern."
    )
    got = mem.resolve(APP, USER, text, k=3)
    assert got[0][0] == vids[2], got


# -- landing on a chat keeps the chat ------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I'd like you to go back to the chat where Omar showed me his leeks. Anything after "
        "that can go, if it's not too much trouble.",
        "Would you mind rewinding to our conversation about the bake sale? Everything after "
        "it can go.",
        "If it isn't a bother, please roll back to that talk about the quilt and drop "
        "everything after.",
    ],
)
def test_going_back_to_a_chat_keeps_it(text: str) -> None:
    assert ps.parse(text).intent == "restore_to", ps.parse(text).describe()


@pytest.mark.parametrize(
    "text",
    [
        "roll back the chat where Omar showed me his leeks",
        "please go back to just before the chat about the quilt",
        "roll back to before that talk about the bake sale",
    ],
)
def test_cancelling_a_chat_or_landing_before_it_is_still_an_undo(text: str) -> None:
    assert ps.parse(text).intent == "undo", ps.parse(text).describe()


# -- a self-correction after a full stop ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "meant", "ruled_out", "intent"),
    [
        ("forget the kayak chat. no, the one about the quilt", "quilt", "kayak", "undo"),
        (
            "Undo the talk about the leeks. Sorry, the one where Omar ran the bake sale.",
            "bake",
            "leeks",
            "undo",
        ),
        (
            "go back to the quilt conversation. No wait, when Priya hiked to the waterfall",
            "waterfall",
            "quilt",
            "restore_to",
        ),
    ],
)
def test_a_self_correction_across_a_full_stop(
    text: str, meant: str, ruled_out: str, intent: str
) -> None:
    p = ps.parse(text)
    assert meant in p.clause and ruled_out not in p.clause, p.describe()
    assert p.excluded and ruled_out in p.excluded[0], p.describe()
    assert p.intent == intent, p.describe()


@pytest.mark.parametrize(
    "text",
    [
        "Please forget the chat about the quilt. No, really, no hurry at all.",
        "Please forget the chat about the quilt. No rush, thanks!",
        "Undo the kayak chat. Sorry, I know it's late.",
    ],
)
def test_a_courtesy_after_a_full_stop_is_no_correction(text: str) -> None:
    assert not ps.parse(text).excluded, ps.parse(text).describe()


# -- a "not" that comments on the asking is no negation ------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Could you rewind to the chat about the quilt - not a huge deal if you can't.",
        "Please go back to our talk about the bake sale, not in any rush though.",
        "Not a big worry, but could you undo the conversation about Omar's leeks?",
    ],
)
def test_a_not_about_the_asking_rules_nothing_out(text: str) -> None:
    assert not ps.parse(text).excluded, ps.parse(text).describe()


def test_a_definite_ruled_out_chat_is_still_a_negation() -> None:
    p = ps.parse("Please go back to the talk about the quilt, not the one about the kayak.")
    assert p.excluded == ("the one about the kayak",), p.describe()


# -- an epithet is a description, not an absent name ---------------------------------------

TRANSCRIPT = [
    "[2 May 2023] Samantha: we watched a hockey game in Toronto last week",
    "[9 May 2023] Melanie: my pottery lessons with the kids are going great",
    "[16 May 2023] Caroline: I flew to Rome for a short holiday and saw the Colosseum",
]


@pytest.fixture()
def transcript():
    mem = hash_store()
    vids = [
        mem.commit(APP, USER, [add(f"t{i}", text)], source="chat", reason="t")
        for i, text in enumerate(TRANSCRIPT)
    ]
    yield mem, vids
    mem.close()


def test_epithet_words_are_the_capitalised_phrase_after_the() -> None:
    from chronomem.nl import epithet_words

    assert epithet_words("her short holiday in the Eternal City, please") == {"eternal", "city"}
    assert epithet_words("Samantha's hockey game up in the Great White North") == {
        "great",
        "white",
        "north",
    }
    assert not epithet_words("the canoe trip on Lake Geneva")
    assert not epithet_words("The Colosseum trip")  # a sentence's first word


@pytest.mark.parametrize(
    ("request_text", "index"),
    [
        ("Would you mind going back to when Caroline flew to the Eternal City? Thanks!", 2),
        ("please undo the chat about Samantha's hockey game in the Great White North", 0),
    ],
)
def test_a_request_naming_a_place_by_an_epithet_acts(transcript, request_text, index) -> None:
    mem, vids = transcript
    plan = mem.plan_rollback_by_nl_query(APP, USER, request_text)
    assert plan.matched_version == vids[index], plan.evidence


def test_an_absent_name_without_the_is_still_refused(transcript) -> None:
    from chronomem import UncertainRequestError

    mem, _ = transcript
    with pytest.raises(UncertainRequestError, match="never mentions"):
        mem.plan_rollback_by_nl_query(APP, USER, "forget the canoe trip on Lake Geneva")


# -- the courteous gerund of an erasure verb -------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Would you mind removing the chat where Omar showed me his leeks? Thanks ever so much.",
        "I'd appreciate you forgetting our talk about the bake sale, if that's all right.",
        "Would you mind rolling back the conversation about Priya's quilt?",
    ],
)
def test_a_courteous_gerund_of_an_erasure_verb_is_an_undo(text: str) -> None:
    assert ps.parse(text).intent == "undo", ps.parse(text).describe()


def test_a_courteous_gerund_moving_back_to_a_chat_is_a_restore() -> None:
    p = ps.parse("Would you mind rolling back to the talk about Priya's quilt?")
    assert p.intent == "restore_to", p.describe()
