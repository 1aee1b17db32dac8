"""The names-only gate (chronomem/nl.py: names_only): a request whose topic words all
miss the best match, which it matches only by a name (a place, a person), is refused as
content the memory does not hold; the same name with a topic word that matches acts."""

from __future__ import annotations

import pytest

from chronomem import UncertainRequestError
from chronomem.nl import proper_names
from tests._memory_fixtures import APP, USER, add, hash_store

FACTS = [
    "Samantha and I watched a hockey game in Toronto last week",
    "Melanie went to a pottery class with her kids",
    "Caroline got a job at the library downtown",
]


@pytest.fixture(scope="module")
def mem():
    store = hash_store()
    vids = [
        store.commit(APP, USER, [add(f"f{i}", text)], source="chat", reason="t")
        for i, text in enumerate(FACTS)
    ]
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
