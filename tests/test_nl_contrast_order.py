"""A contrast that places the meant chat in time against the ruled-out one ("not X, the
later one where Y", "the earlier one") keeps only matches for Y on that side of X's chat;
"restore to that" after such a contrast lands on the chat it points at.

The phrasings here were written for these tests; none is a line of a request file."""

from __future__ import annotations

import pytest

from chronomem import parse as ps
from tests._memory_fixtures import APP, USER, chat_store

SESSIONS = [
    "Ravi asked his mentor about Lisbon",
    "Ravi signed up for the mentorship program at work",
    "Ravi asked his mentor about renting a flat in Lisbon near the river",
    "Ines baked bread with her grandmother",
]


@pytest.fixture(scope="module")
def store():
    mem, vids = chat_store(SESSIONS)
    yield mem, vids
    mem.close()


def test_without_an_order_the_best_match_wins(store) -> None:
    mem, vids = store
    plan = mem.plan_rollback_by_nl_query(
        APP,
        USER,
        "not the chat where Ravi joined the mentorship program, the one where he "
        "asked his mentor about Lisbon. go back to it",
    )
    assert plan.matched_version == vids[0], plan.evidence


@pytest.mark.parametrize(
    ("text", "meant", "side"),
    [
        (
            "not the chat where Ravi joined the mentorship program, the later one where he "
            "asked his mentor about Lisbon. go back to it",
            2,
            "after",
        ),
        (
            "Ravi and his mentor and Lisbon: not the mentorship program signup, the more "
            "recent chat where he asked his mentor about Lisbon. restore to that",
            2,
            "after",
        ),
        (
            "not the chat where Ravi asked about renting a flat near the river, the earlier "
            "one where he asked his mentor about Lisbon. go back to it",
            0,
            "before",
        ),
    ],
)
def test_the_meant_chat_is_on_the_side_of_the_ruled_out_one_the_request_says(
    store, text: str, meant: int, side: str
) -> None:
    mem, vids = store
    plan = mem.plan_rollback_by_nl_query(APP, USER, text)
    assert plan.matched_version == vids[meant], plan.evidence
    assert plan.evidence["steps"]["excluded"][0]["side"] == side


@pytest.mark.parametrize(
    "text",
    [
        "Not the chat where Ravi joined the program, the later one where he said he had not "
        "been to Lisbon since he was small. Restore to that.",
        "the one where Ines baked bread since it was raining - go back to that one",
        "rewind to it.",
    ],
)
def test_restore_to_a_pronoun_keeps_what_it_points_at(text: str) -> None:
    assert ps.parse(text).intent == "restore_to", ps.parse(text).describe()


@pytest.mark.parametrize(
    "text",
    ["undo that, go back to before that", "forget it and go back to before it"],
)
def test_going_back_to_before_a_pronoun_is_still_an_undo(text: str) -> None:
    assert ps.parse(text).intent == "undo", ps.parse(text).describe()


def test_a_first_mention_said_in_other_words_is_the_best_match(minilm) -> None:
    # "married" is in no chat and the speaker's name is in every one: the first chat that
    # names him is no mention of the wedding.
    from tests._memory_fixtures import add, open_store

    mem = open_store(embedder=minilm)
    texts = [
        "Ravi: work is busy and I fixed the garden fence",
        "Ravi: Ana and I had our wedding last week, we are husband and wife now",
        "Ravi: I repainted the fence green",
    ]
    vids = [
        mem.commit(APP, USER, [add(f"s{i}", t)], source="chat", reason="t")
        for i, t in enumerate(texts)
    ]
    try:
        plan = mem.plan_rollback_by_nl_query(
            APP, USER, "go back to before you knew Ravi got married"
        )
        assert plan.target_version == vids[0], plan.evidence
    finally:
        mem.close()


def test_the_later_photo_and_a_though_not_contrast(store) -> None:
    mem, vids = store
    for text in (
        "Drop Ravi's Lisbon questions and what came after, but not the one where he joined "
        "the mentorship program; the later message where he asked his mentor about Lisbon.",
        "Drop Ravi's Lisbon questions and what came after, though not the one where he "
        "joined the mentorship program; the later one where he asked his mentor about Lisbon.",
    ):
        plan = mem.plan_rollback_by_nl_query(APP, USER, text)
        assert plan.evidence["steps"]["excluded"][0]["side"] == "after", plan.evidence
        assert plan.matched_version == vids[2], plan.evidence


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        (
            "could you go back to the state right before Ines baked bread, please?",
            "undo",
        ),
        ("roll back to the point just before Ravi asked his mentor about Lisbon", "undo"),
        ("restore to the moment before the bread chat", "undo"),
        ("go back to the moment Ravi asked his mentor about Lisbon", "restore_to"),
        ("return to the state after Ines baked bread", "restore_to"),
    ],
)
def test_the_state_right_before_an_event_is_an_undo_of_it(text: str, intent: str) -> None:
    assert ps.parse(text).intent == intent, ps.parse(text).describe()
