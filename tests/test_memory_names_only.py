"""The names-only gate (chronomem/nl.py: names_only): a request whose topic words all
miss the best match, which it matches only by a name (a place, a person), is refused as
content the memory does not hold; the same name with a topic word that matches acts."""

from __future__ import annotations

import pytest

from chronomem import UncertainRequestError
from chronomem.nl import proper_names
from tests._memory_fixtures import APP, USER, chat_store

FACTS = [
    "Samantha and I watched a hockey game in Toronto last week",
    "Melanie went to a pottery class with her kids",
    "Caroline got a job at the library downtown",
]


@pytest.fixture(scope="module")
def mem():
    store, vids = chat_store(FACTS, prefix="f")
    yield store, vids
    store.close()


def test_proper_names_are_the_capitalised_words() -> None:
    got = proper_names("undo the chat about Samantha's bar mitzvah in Toronto, I'd say")
    assert got == {"samantha", "toronto"}
    assert proper_names("plz forget the hockey game") == frozenset()


def test_a_match_on_names_alone_is_refused(mem) -> None:
    mem, _ = mem
    request = "undo the chat about Samantha's bar mitzvah in Toronto"
    for call in (mem.plan_rollback_by_nl_query, mem.plan_selective_undo):
        with pytest.raises(UncertainRequestError, match="only by name"):
            call(APP, USER, request)


def test_a_topic_word_that_matches_acts(mem) -> None:
    mem, vids = mem
    plan = mem.plan_rollback_by_nl_query(APP, USER, "undo Samantha's hockey game in Toronto")
    assert plan.matched_version == vids[0]
    sel = mem.plan_selective_undo(APP, USER, "forget Samantha's hockey game in Toronto")
    assert sel.evidence["matched"][0][0] == vids[0]


# The memory writes names with a capital inside its sentences (a transcript line), while a
# casual request writes them in lower case.
TRANSCRIPT = [
    "[2 May 2023] Samantha: we watched a hockey game in Toronto last week",
    "[9 May 2023] Melanie: I went to a pottery class with my kids",
    "[16 May 2023] Caroline: I got a job at the library downtown",
]


@pytest.fixture()
def chat(each_backend):
    # the descriptor is read back with SQL: run on both backends
    store, vids = chat_store(TRANSCRIPT, prefix="t")
    yield store, vids
    store.close()


def test_written_as_names_reads_capitals_inside_a_sentence() -> None:
    from chronomem.nl import written_as_names

    assert written_as_names(TRANSCRIPT[0]) == {"may", "samantha", "toronto"}
    # a capital at a sentence's start is no name; a word also written in lower case neither
    assert written_as_names("Pottery is fun. I love pottery in Paris") == {"paris"}


def test_a_lower_case_name_counts_as_a_name(chat) -> None:
    mem, _ = chat
    request = "undo the chat about samantha's bar mitzvah in toronto"
    for call in (mem.plan_rollback_by_nl_query, mem.plan_selective_undo):
        with pytest.raises(UncertainRequestError, match="only by name"):
            call(APP, USER, request)


def test_a_lower_case_name_with_a_matching_topic_word_acts(chat) -> None:
    mem, vids = chat
    plan = mem.plan_rollback_by_nl_query(APP, USER, "undo samantha's hockey game in toronto")
    assert plan.matched_version == vids[0]
