"""Counting mentions of an activity (chronomem/resolve.py: activity_holders, with the
inflection helpers of chronomem/fts5_tokenizer.py): the index's Porter stem joins
"camping" and "boot camps", so "the first time camping came up" must not count a commit
that holds only the camp."""

from __future__ import annotations

import pytest

from chronomem import reads
from chronomem.fts5_tokenizer import activity_stem, holds_activity, stems
from chronomem.resolve import activity_holders
from tests._memory_fixtures import APP, USER, add, hash_store

FACTS = [
    "Maria started going to boot camps with her family last month",
    "Maria went camping with friends from church last weekend",
    "John camped with his dog Max by the lake",
    "Maria is camping again in the mountains",
]


@pytest.fixture(scope="module")
def mem():
    store = hash_store()
    vids = [
        store.commit(APP, USER, [add(f"c{i}", text)], source="chat", reason="t")
        for i, text in enumerate(FACTS)
    ]
    yield store, vids
    store.close()


def test_activity_stem_only_for_shortened_ing_words() -> None:
    assert activity_stem("camping") == "camp"
    assert activity_stem("training") == "train"
    for word in ("thing", "sing", "camps", "camp", "king"):
        assert activity_stem(word) is None


def test_the_first_time_an_activity_came_up_skips_the_thing(mem) -> None:
    store, vids = mem
    plan = store.plan_rollback_by_nl_query(APP, USER, "undo the first time camping came up")
    assert plan.evidence["steps"]["mention"]["commit"] == vids[1]


def test_holders_keep_ing_and_ed_forms(mem) -> None:
    store, vids = mem
    sc = reads.require_scope(store.backend, APP, USER)
    assert activity_holders(store.backend, sc, "camping", set(vids)) == set(vids[1:])
    assert activity_holders(store.backend, sc, "camps", set(vids)) == set(vids)


def test_one_stem_for_inflections() -> None:
    assert stems(["camping", "Camps", "camped", "camp"]) == ["camp"] * 4
    assert holds_activity("John camped by the lake", "camp")
    assert not holds_activity("Maria started going to boot camps", "camp")
