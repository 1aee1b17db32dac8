"""The in-memory lexical index scores exactly as the backend's own BM25 does (both
backends), and it and the dense matrix stay exact across commits, truncates, reverts
and redactions."""

from __future__ import annotations

import random

import numpy as np
import pytest

from chronomem import lexindex as lx
from chronomem import reads
from chronomem.query import fts_terms
from tests._memory_fixtures import APP, USER, add, hash_store

pytestmark = pytest.mark.usefixtures("each_backend")

WORDS = "oslo lisbon nurse hospital beagle puppy sushi kite museum jazz cooking cooked".split()


def _writes(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    return [
        {
            "ops": [
                add(f"i{i % 7}", " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9))))
            ],
            "source": "t",
            "reason": "r",
        }
        for i in range(n)
    ]


def _check(mem, queries: list[str]) -> None:
    db = mem.backend
    sc = reads.require_scope(db, APP, USER)
    ix = mem._caches.lexicon.get(db, sc.scope_id, sc.gen)
    dm = mem._caches.dense.get(db, sc.scope_id, sc.gen)  # extended after commits, like the index
    owners, matrix = db.scope_vectors(sc.scope_id)
    assert np.array_equal(np.repeat(dm.vids, np.diff([*dm.starts, len(matrix)])), owners)
    assert np.array_equal(dm.matrix, matrix)
    for query in queries:
        terms = fts_terms(query)
        want = db.match_descriptors(sc.scope_id, terms, 40)
        assert lx.match(db, ix, sc.scope_id, terms, 40) == want, query
        vids = [v for v, _ in want[:3]] + [1, 2]
        got = lx.scores_of(db, ix, sc.scope_id, terms, vids)
        assert got == db.descriptor_scores(sc.scope_id, terms, vids), query


QUERIES = ["oslo", "sushi cooking", "cooked cooking cook", "beagle jazz kite museum", "zzz"]


def test_index_scores_match_the_backend_to_the_last_bit() -> None:
    mem = hash_store()
    mem.commit_many(APP, USER, _writes(120))
    _check(mem, QUERIES)
    mem.close()


def test_index_follows_commits_truncates_reverts_and_redactions() -> None:
    mem = hash_store()
    mem.commit_many(APP, USER, _writes(60))
    _check(mem, QUERIES)
    mem.commit_many(APP, USER, _writes(10, seed=1))  # appended: extended in place
    _check(mem, QUERIES)
    mem.rollback_to_version(APP, USER, 30, mode="truncate")
    _check(mem, QUERIES)
    mem.commit_many(APP, USER, _writes(5, seed=2))
    _check(mem, QUERIES)
    mem.rollback_to_version(APP, USER, 10, mode="revert")
    _check(mem, QUERIES)
    mem.rollback_to_version(APP, USER, 20, mode="truncate")  # absorbs the first range
    _check(mem, QUERIES)
    mem.commit_many(APP, USER, _writes(3, seed=3))
    _check(mem, QUERIES)
    mem.redact(APP, USER, "sushi", reason="test", by="text")
    _check(mem, [*QUERIES, "sushi"])
    mem.close()


def test_resolve_uses_the_backend_for_phrase_terms() -> None:
    mem = hash_store()
    mem.commit(APP, USER, [add("a", "foo bar baz")], source="t", reason="r")
    mem.commit(APP, USER, [add("b", "bar foo")], source="t", reason="r")
    assert lx.single_tokens(["foo_bar"]) is None  # FTS5 makes a two-token phrase of it
    assert mem.resolve_lexical(APP, USER, "foo_bar", 5) == mem.backend.match_descriptors(
        reads.require_scope(mem.backend, APP, USER).scope_id, ["foo_bar"], 5
    )
    mem.close()
