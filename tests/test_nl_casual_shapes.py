"""Three shapes of request in their everyday forms: a knowledge state named through the
knower or through the event ("pretend you never heard X", "when X was news to you"), a
ruled-out clause in brackets ("Y (not X)"), and function words typed by sound ("wen",
"w/"). A self-correction that re-describes only the event keeps the verb it opened with.

The phrasings here were written for these tests; none is a line of a request file."""

from __future__ import annotations

import pytest

from chronomem import negation as ng
from chronomem import parse as ps
from chronomem import query as q
from tests._memory_fixtures import APP, USER, chat_store

SESSIONS = [
    "Lena adopted a grey kitten named Pip from the shelter",
    "Marco started learning the cello with a teacher from the conservatory",
    "Lena said Pip the kitten knocked over all her plants",
    "Marco played the cello at his first recital in the town hall",
    "Lena bought an old road bike at the flea market",
    "Marco said the cello recital went well and he wants to join an orchestra",
]


@pytest.fixture(scope="module")
def store():
    mem, vids = chat_store(SESSIONS)
    yield mem, vids
    mem.close()


# -- knowledge states: undo of the first mention -------------------------------------------


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("pretend u never found out about Marco's cello lessons", "cello"),
        ("Make it so you'd never heard of Lena's kitten.", "kitten"),
        ("act like you never knew that Marco plays the cello", "cello"),
        ("Roll back to when Lena's kitten was still news to you.", "kitten"),
        ("take me back to when the flea market bike was new to you", "bike"),
        ("back to when you still had no clue about the kitten", "kitten"),
        ("go back to when you'd never heard of Marco's recital", "recital"),
        ("before you'd heard anything about the bike, please", "bike"),
        ("rewind to back when you were still clueless about the orchestra", "orchestra"),
    ],
)
def test_a_knowledge_state_is_an_undo_of_the_first_mention(text: str, content: str) -> None:
    p = ps.parse(text)
    assert p.knowledge and p.intent == "undo", p.describe()
    assert p.operator("ordinal").n == 1
    assert content in p.clause.lower(), p.describe()


@pytest.mark.parametrize(
    "text",
    [
        "undo the chat about my new job",
        "restore to when I got the news about the move",
        "forget the chat where Lena told me the news",
        "restore to when Marco said the cello was new",
        "undo the chat where you heard me sing",
    ],
)
def test_news_or_knowing_without_a_knower_frame_is_no_knowledge_state(text: str) -> None:
    assert not ps.parse(text).knowledge, ps.parse(text).describe()


@pytest.mark.parametrize(
    "text",
    [
        "pretend you never heard about Marco and the cello",
        "rewind to when Marco's cello was news to you",
        "go back to when you still had no idea Marco took up the cello",
    ],
)
def test_a_knowledge_state_lands_before_the_first_mention(store, text: str) -> None:
    mem, vids = store
    plan = mem.plan_rollback_by_nl_query(APP, USER, text)
    assert plan.intent == "undo"
    assert plan.matched_version == vids[1], plan.evidence
    assert plan.target_version == vids[0]


# -- a ruled-out clause in brackets --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "meant", "ruled_out"),
    [
        (
            "undo the chat where Marco played at the recital (not the lessons)",
            "recital",
            "lessons",
        ),
        ("restore to the talk about the kitten [but not the plants]", "kitten", "plants"),
        (
            "forget the bike chat (I don't mean the flea market one) from spring",
            "spring",
            "flea market",
        ),
    ],
)
def test_a_ruled_out_clause_in_brackets(text: str, meant: str, ruled_out: str) -> None:
    split = ng.split_negation(text)
    assert split is not None
    assert meant in split[0] and ruled_out not in split[0], split
    assert ruled_out in split[1], split


@pytest.mark.parametrize(
    "text",
    [
        "undo the chat (the one from last week) about the dog",
        "forget the chat about the recital (it was not great)",
    ],
)
def test_an_aside_in_brackets_that_rules_nothing_out(text: str) -> None:
    split = ng.split_negation(text)
    assert split is None or "recital" in split[0] or "dog" in split[0], split


def test_the_bracketed_clause_is_passed_over(store) -> None:
    mem, vids = store
    plan = mem.plan_rollback_by_nl_query(
        APP, USER, "restore to the cello chat where Marco played (not when he started learning)"
    )
    assert plan.matched_version in (vids[3], vids[5]), plan.evidence


# -- function words typed by sound -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("undo evrything from wen lena got the kitten", "from when lena"),
        ("restore to the chat w/ the cello stuff", "with the cello"),
        ("forget tht chat bc it was private", "that chat because it"),
    ],
)
def test_function_words_typed_by_sound(text: str, expanded: str) -> None:
    assert expanded in ps.parse(text).normal.lower(), ps.parse(text).describe()


# -- a self-correction keeps its opening verb --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        (
            "Go back to when Marco first had a lesson -- no wait, I mean the recital afterwards.",
            "restore_to",
        ),
        ("restore to the kitten chat... no, sorry, the plants one afterwards", "restore_to"),
        ("undo the kitten chat -- no wait, I mean the one about the plants", "undo"),
        ("undo the kitten chat -- no, restore to the one about the plants", "restore_to"),
        ("go back to the recital chat... no wait, undo the recital chat", "undo"),
    ],
)
def test_a_self_correction_keeps_the_verb_it_opened_with(text: str, intent: str) -> None:
    assert ps.parse(text).intent == intent, ps.parse(text).describe()


def test_opens_with_request() -> None:
    assert q.opens_with_request("please restore to the chat")
    assert q.opens_with_request("Undo the kitten chat")
    assert not q.opens_with_request("when he skyped with them afterwards")
