"""The in-memory item index returns exactly what the backend's ``match_items`` returns
(span ids, order, scores to the last bit, ties included) on both backends, across
commits, truncates, reverts, clones and redactions; requests it cannot score alone go
to the backend; a redaction leaves none of the erased text's tokens in its memo."""

from __future__ import annotations

import random

import pytest

from chronomem import itemindex as ii
from chronomem import reads
from chronomem.query import fts_terms
from tests._memory_fixtures import APP, USER, add, hash_store, on_postgres

pytestmark = pytest.mark.usefixtures("each_backend")

WORDS = "oslo lisbon nurse hospital beagle puppy sushi kite museum jazz cooking cooked".split()
# a handful of texts repeated across items: many equal scores, shared memo entries
REPEATED = ["oslo kite", "jazz museum oslo", "cooking sushi", "kite", "oslo oslo jazz"]


def _writes(n: int, seed: int = 0, items: int = 9) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if rng.random() < 0.4:
            text = rng.choice(REPEATED)
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))
        ops = [add(f"i{rng.randrange(items)}", text), add(f"n{i}", rng.choice(REPEATED))]
        if rng.random() < 0.2:
            ops.append({"op": "delete", "item_id": f"n{rng.randrange(max(i, 1))}"})
        out.append({"ops": ops, "source": "t", "reason": "r"})
    return out


QUERIES = [
    "oslo",
    "kite",
    "sushi cooking",
    "cooked cooking cook",  # three terms, one token: three phrases, each scored
    "beagle jazz kite museum",
    "oslo oslo lisbon",
    "zzz",
    "zzz oslo",
    "the",
]
DEPTHS = (1, 2, 3, 5, 8, 40, 1000)  # small depths cut groups of equal scores


def _check(mem, queries: list[str] = QUERIES, user: str = USER) -> int:
    """Every query at every depth: the index's list equals the backend's; returns
    how many lists were compared."""
    db = mem.backend
    sc = reads.require_scope(db, APP, user)
    items = mem._caches.items.rows(db, sc)
    n = 0
    for query in queries:
        terms = fts_terms(query)
        for k in DEPTHS:
            want = db.match_items(sc.scope_id, terms, k)
            got = ii.match(db, sc.scope_id, terms, k, lambda: mem._caches.items.index(sc, items))
            assert got is not None, query
            assert got == want, (query, k)
            assert reads.match_items(db, sc, terms, k, mem._caches.items, items) == want
            n += 1
    return n


def test_index_equals_the_backend_to_the_last_bit_ties_included() -> None:
    mem = hash_store()
    mem.commit_many(APP, USER, _writes(150))
    assert _check(mem) == len(QUERIES) * len(DEPTHS)
    db = mem.backend
    sc = reads.require_scope(db, APP, USER)
    full = db.match_items(sc.scope_id, ["kite"], 1000)
    scores = [s for _, s in full]
    assert len(set(scores)) < len(scores)  # the check above did meet ties
    for s in set(scores):  # and both backends break them by span id
        spans = [sid for sid, x in full if x == s]
        assert spans == sorted(spans)
    mem.close()


def test_document_lengths_are_the_backends() -> None:
    mem = hash_store()
    mem.commit_many(APP, USER, _writes(40))
    db = mem.backend
    sc = reads.require_scope(db, APP, USER)
    items = mem._caches.items.rows(db, sc)
    ix = mem._caches.items.index(sc, items)
    if on_postgres():
        rows = db.conn.execute(
            "SELECT doc, len + 1 FROM item_docs WHERE doc = ANY(?)", ([r[0] for r in items],)
        ).fetchall()
    else:
        from chronomem.sqlite_fts import _varints

        rows = [
            (sid, sum(_varints(blob)))
            for sid, blob in db.conn.execute("SELECT id, sz FROM item_fts_docsize").fetchall()
        ]
    want = dict(rows)
    assert {int(s): float(n) for s, n in zip(ix.spans, ix.dlen, strict=True)} == {
        int(r[0]): float(want[r[0]]) for r in items
    }
    mem.close()


def test_index_follows_commits_truncates_reverts_and_clones() -> None:
    mem = hash_store()
    vids = mem.commit_many(APP, USER, _writes(60))
    _check(mem)
    mem.commit_many(APP, USER, _writes(10, seed=1))
    _check(mem)
    mem.rollback_to_version(APP, USER, vids[30], mode="truncate")
    _check(mem)
    mem.commit_many(APP, USER, _writes(5, seed=2))
    _check(mem)
    mem.rollback_to_version(APP, USER, vids[10], mode="revert")
    _check(mem)
    mem.rollback_to_version(APP, USER, vids[20], mode="truncate")
    _check(mem)
    # a rollback on a copy, as a generation cell does per request: the copy starts with
    # the original's cached index, and neither is disturbed by the other
    copy = mem.clone()
    _check(copy)
    copy.rollback_to_version(APP, USER, vids[5], mode="truncate")
    _check(copy)
    copy.commit_many(APP, USER, _writes(4, seed=3))
    _check(copy)
    _check(mem)
    copy.close()
    mem.close()


def test_several_scopes_in_one_store() -> None:
    mem = hash_store()
    mem.commit_many(APP, USER, _writes(40))
    mem.commit_many(APP, "bob", _writes(30, seed=5))
    mem.commit_many("other", USER, _writes(20, seed=6))
    # body words that spell a scope tag: only the body column counts for them
    mem.commit(APP, USER, [add("tags", "s1 s2 s3 oslo")], source="t", reason="r")
    queries = [*QUERIES, "s1", "s2 oslo", "s3 s1"]
    for user in (USER, "bob"):
        _check(mem, queries, user=user)
    mem.rollback_to_version(APP, "bob", 3, mode="truncate")
    for user in (USER, "bob"):
        _check(mem, user=user)
    mem.close()


def test_redaction_keeps_results_exact_and_forgets_the_tokens() -> None:
    mem = hash_store()
    mem.commit_many(APP, USER, _writes(40))
    mem.commit(APP, USER, [add("secret", "zebracode kite")], source="t", reason="r")
    _check(mem, [*QUERIES, "zebracode"])
    memo = ii.text_tokens()
    assert memo.ids(["zebracod"])[1] != [-1]  # the porter stem, memoised
    epoch = memo.epoch
    from chronomem import rerank

    rerank.descriptor_terms("add: zebracode kite")  # as the reranker memoises candidates
    mem.redact(APP, USER, "secret", reason="test", by="id")
    assert memo.epoch > epoch
    assert not any("zebracode" in t for t in rerank._TERMS)
    assert memo.ids(["zebracod"])[1] == [-1]
    assert not any("zebracode" in t for t in memo._texts)
    # nor do the backend's per-token statistics (SQLite keeps them per connection)
    assert not any(
        "zebracod" in known for _, _, known in getattr(mem.backend, "_stats", {}).values()
    )
    _check(mem, [*QUERIES, "zebracode"])
    mem.redact(APP, USER, "sushi", reason="test", by="text")
    _check(mem, [*QUERIES, "sushi"])
    # a redact op inside a commit forgets too
    mem.commit(APP, USER, [add("pin", "pincode4711 oslo")], source="t", reason="r")
    _check(mem, ["pincode4711 oslo"])
    mem.commit(APP, USER, [{"op": "redact", "item_id": "pin"}], source="t", reason="r")
    assert memo.ids(["pincode4711"])[1] == [-1]
    _check(mem, ["pincode4711 oslo"])
    mem.close()


def test_a_stale_index_is_rebuilt_after_another_store_redacts() -> None:
    mem = hash_store()
    mem.commit_many(APP, USER, _writes(30))
    _check(mem)
    other = hash_store()
    other.commit(APP, USER, [add("x", "oslo jazz")], source="t", reason="r")
    other.redact(APP, USER, "x", reason="test", by="id")  # empties the shared memo
    _check(mem)  # this store's cached index is rebuilt, not read with stale term ids
    other.close()
    mem.close()


def test_phrases_tokenless_terms_and_empty_requests_go_to_the_backend() -> None:
    mem = hash_store()
    mem.commit(APP, USER, [add("a", "foo bar baz")], source="t", reason="r")
    mem.commit(APP, USER, [add("b", "bar foo")], source="t", reason="r")
    db = mem.backend
    sc = reads.require_scope(db, APP, USER)
    items = mem._caches.items.rows(db, sc)
    assert ii.single_tokens(["foo_bar"]) is None  # FTS5 makes a two-token phrase of it
    assert ii.single_tokens(["-"]) is None  # and nothing of this
    for terms in (["foo_bar"], ["bar", "foo_bar"], ["foo_foo"]):
        assert ii.match(db, sc.scope_id, terms, 5, lambda: ii.build(items)) is None
        want = db.match_items(sc.scope_id, terms, 5)
        assert reads.match_items(db, sc, terms, 5, mem._caches.items, items) == want
    assert ii.match(db, sc.scope_id, [], 5, lambda: ii.build(items)) == []
    assert ii.match(db, sc.scope_id, ["foo"], 0, lambda: ii.build(items)) == []
    assert ii.match(db, sc.scope_id, ["foo"], -1, lambda: ii.build(items)) is None
    assert mem.search(APP, USER, "", k=5, mode="lexical") == []
    mem.close()


def test_store_search_ranks_as_the_backend_does() -> None:
    mem = hash_store()
    mem.commit_many(APP, USER, _writes(80))
    db = mem.backend
    sc = reads.require_scope(db, APP, USER)
    by_span = {sid: (item, text) for sid, item, text in mem._caches.items.rows(db, sc)}
    for query in QUERIES:
        want = db.match_items(sc.scope_id, fts_terms(query), mem.depth)[:7]
        got = mem.search(APP, USER, query, k=7, mode="lexical")
        assert [(h.item_id, h.text, h.score) for h in got] == [
            (*by_span[s], score) for s, score in want
        ]
    mem.close()


def test_empty_state_and_no_matching_item() -> None:
    mem = hash_store()
    mem.commit(APP, USER, [add("a", "oslo")], source="t", reason="r")
    mem.commit(APP, USER, [{"op": "delete", "item_id": "a"}], source="t", reason="r")
    _check(mem, ["oslo", "kite"])  # S(HEAD) is empty, the index still holds a's span
    mem.close()


def test_a_memo_over_its_bound_starts_again_and_stays_exact() -> None:
    mem = hash_store()
    mem.commit_many(APP, USER, _writes(30))
    db = mem.backend
    sc = reads.require_scope(db, APP, USER)
    items = mem._caches.items.rows(db, sc)
    memo = ii.TextTokens(max_entries=3)  # fewer than S(HEAD)'s distinct texts
    for query in QUERIES:
        terms = fts_terms(query)
        got = ii.match(db, sc.scope_id, terms, 40, lambda: ii.build(items, memo), memo)
        assert got == db.match_items(sc.scope_id, terms, 40), query
    assert len(memo._texts) <= len({r[2] for r in items})
    mem.close()
