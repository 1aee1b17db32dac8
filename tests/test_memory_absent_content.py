"""Requests about content the memory never held, requests that name nothing, messages that
ask for no change at all, and the set a selective undo removes (chronomem/nl.py:
absent_names; chronomem/nocontent.py; chronomem/nl_selective.py: _same_fact).

Every request here was written for this file, not taken from a request set: absent
content that shares a common word with the memory ("trip", "lake", "hockey", "lessons"),
stance adverbs around a request that names nothing, and a fact told over two turns of one
chat whose words recur in another chat.
"""

from __future__ import annotations

import pytest

from chronomem import UncertainRequestError
from chronomem import parse as ps
from chronomem.nocontent import asks_for_change
from tests._memory_fixtures import APP, USER, chat_store

pytestmark = pytest.mark.usefixtures("each_backend")

# A transcript: the memory writes names with a capital inside its sentences.
TRANSCRIPT = [
    "[2 May 2023] Samantha: we watched a hockey game in Toronto last week",
    "[9 May 2023] Melanie: my pottery lessons with the kids are going great",
    "[16 May 2023] Caroline: I got a job at the library downtown",
    "[23 May 2023] Caroline: our family trip to the lake was lovely, we swam every day",
    "[30 May 2023] Melanie: we drove along the European coastline last summer",
]


@pytest.fixture()
def mem():
    store, vids = chat_store(TRANSCRIPT, prefix="t")
    yield store, vids
    store.close()


def _both_gates(store):
    return (store.plan_rollback_by_nl_query, store.plan_selective_undo)


# Absent content sharing common words with the memory, a written name among the words it
# never wrote: refused by both gates, whatever else matches.
@pytest.mark.parametrize(
    "request_text",
    [
        "forget the canoe trip on Lake Geneva",
        "undo the chat about my cousin's hockey game in Denver",
        "please forget the family trip to the lake in Oregon with my stepdad",
    ],
)
def test_absent_name_and_topic_are_refused(mem, request_text: str) -> None:
    store, _ = mem
    for call in _both_gates(store):
        with pytest.raises(UncertainRequestError, match="never mentions"):
            call(APP, USER, request_text)


def test_other_absent_content_is_refused_too(mem) -> None:
    # shares only "lessons": the weak-match check refuses it before the names are read
    store, _ = mem
    for call in _both_gates(store):
        with pytest.raises(UncertainRequestError):
            call(APP, USER, "forget my scuba lessons in Cancun")


# Present content: a name the memory writes, a name it writes only in a derived form
# ("Europe" in "European"), and one unknown name beside words it holds.
@pytest.mark.parametrize(
    ("request_text", "index"),
    [
        ("forget Samantha's hockey game in Toronto", 0),
        ("forget that Melanie drove along the coast in Europe", 4),
        ("undo the chat about Caroline's family trip to the lake in Oregon", 3),
    ],
)
def test_present_content_acts(mem, request_text: str, index: int) -> None:
    store, vids = mem
    plan = store.plan_rollback_by_nl_query(APP, USER, request_text)
    assert plan.matched_version == vids[index]
    sel = store.plan_selective_undo(APP, USER, request_text)
    assert sel.evidence["matched"][0][0] == vids[index]


def test_lower_case_names_are_never_read_as_absent_names(mem) -> None:
    # a casual request writes names in lower case: this check does not fire on it
    store, vids = mem
    plan = store.plan_rollback_by_nl_query(APP, USER, "forget the family trip to the lake")
    assert plan.matched_version == vids[3]


# Degree and stance adverbs name no content.
@pytest.mark.parametrize(
    "request_text",
    [
        "appreciate you, truly. could you just wipe that for me?",
        "seriously, totally my bad, undo it",
        "sincerely sorry, could you simply delete that? genuinely my mistake",
    ],
)
def test_stance_adverbs_name_nothing(mem, request_text: str) -> None:
    assert not ps.parse(request_text).names_content
    store, _ = mem
    for call in _both_gates(store):
        with pytest.raises(UncertainRequestError, match="names no content"):
            call(APP, USER, request_text)


@pytest.mark.parametrize(
    "request_text",
    [
        "seriously, forget Samantha's hockey game in Toronto",
        "truly, the pottery lessons with the kids: forget them",
    ],
)
def test_a_stance_adverb_beside_a_topic_still_acts(mem, request_text: str) -> None:
    assert ps.parse(request_text).names_content
    store, _ = mem
    store.plan_rollback_by_nl_query(APP, USER, request_text)


# Small talk that shares words with the memory (the lake, the library, lessons, a game):
# no request in it, so both gates refuse it whatever it matches.
@pytest.mark.parametrize(
    "text",
    [
        "Long week at the library, and the drive home downtown was awful. Anyway, thanks.",
        "The weather at the lake was perfect this morning. Speak soon!",
        "I keep meaning to sign up for pottery lessons and never do, ha.",
        "Just got back from the hockey game, what a night. Talk later!",
        "hmm let me think about the family trip and get back to you",
    ],
)
def test_small_talk_asks_for_nothing_and_is_refused(mem, text: str) -> None:
    assert not asks_for_change(text)
    store, _ = mem
    for call in _both_gates(store):
        with pytest.raises(UncertainRequestError, match="asks for no change"):
            call(APP, USER, text)


# A request can ask without a request verb; a misspelt verb is read back first.
@pytest.mark.parametrize(
    ("text", "index"),
    [
        ("keep only the chat about Samantha's hockey game in Toronto", 0),
        ("your memory should end at Caroline's job at the library downtown", 2),
        ("make it so you never heard about the pottery lessons with the kids", 1),
        ("the family trip to the lake should be the last thing you remember", 3),
        ("plz fogret the hockey game in Toronto", 0),
    ],
)
def test_requests_without_a_request_verb_still_ask(mem, text: str, index: int) -> None:
    assert asks_for_change(text)
    store, vids = mem
    assert store.plan_rollback_by_nl_query(APP, USER, text).matched_version == vids[index]
