"""PostgreSQL's few-round-trip writes (chronomem.pg.fastwrite) store what the
generic write path stores: the same rows in every table (keys compared by order, since
the fast path draws them from the sequences first), so the same answers."""

from __future__ import annotations

from typing import Any

import pytest

from chronobench.bench.synthetic import synthetic_writes
from chronomem.pg import commitfn, fastwrite, lexical
from chronomem.pg.backend import PostgresBackend
from chronomem.pg.schema import SCHEMA_VERSION
from tests._memory_fixtures import APP, USER, hash_store

TABLES = {  # table -> (columns compared, key columns replaced by their rank)
    "scopes": ("app, \"user\", head_vid, head_seq, next_vid, next_seq, gen, item_n, item_tok, "
               "desc_n, desc_tok", ()),
    "versions": ("vrow, version_id, seq, parent, op, summary, labels, source, reason, "
                 "valid_time, descriptor", ("vrow",)),
    "events": ("version_id, op, item_id, hash, meta, source, reason, valid_time, redacted", ()),
    "blobs": ("hash, text", ()),
    "spans": ("span_id, item_id, hash, from_seq, to_seq", ("span_id",)),
    "hidden": ("lo, hi", ()),
    "item_docs": ("doc, len", ("doc",)),
    "item_terms": ("term, doc, pos", ("doc",)),
    "desc_docs": ("doc, len, body", ("doc",)),
    "desc_terms": ("term, doc, pos", ("doc",)),
    "desc_vecs": ("vrow, chunk, vec", ("vrow",)),
    "item_df": ("term, n", ()),
    "desc_df": ("term, n", ()),
}  # fmt: skip


def _rows(mem: Any) -> dict[str, list[tuple]]:
    # the commit function leaves the document counts of its last writes to a later
    # fold (the generic path counts at once): fold them, so the counts compare
    scopes = [r[0] for r in mem.conn.execute("SELECT scope_id FROM scopes").fetchall()]
    for ix in (lexical.ITEMS, lexical.DESCRIPTORS):
        lexical.fold(mem.conn, ix, scopes)
    out: dict[str, list[tuple]] = {}
    for table, (cols, keys) in TABLES.items():
        rows = mem.conn.execute(f"SELECT {cols} FROM {table}").fetchall()
        names = [c.strip() for c in cols.split(",")]
        for key in keys:  # keys by rank: gaps in a sequence are not content
            at = names.index(key)
            rank = {v: i for i, v in enumerate(sorted({r[at] for r in rows}))}
            rows = [tuple(rank[x] if j == at else x for j, x in enumerate(r)) for r in rows]
        out[table] = sorted(
            (tuple(x.tolist() if hasattr(x, "tolist") else x for x in r) for r in rows), key=repr
        )
    return out


def _fill(mem: Any) -> list[Any]:
    writes = synthetic_writes(120)
    mem.commit_many(APP, USER, writes[:60])  # batched: one transaction
    for w in writes[60:]:
        mem.commit(APP, USER, **w)
    mem.commit(
        APP,
        USER,
        [
            {"op": "add", "item_id": "twice", "text": "a"},
            {"op": "update", "item_id": "twice", "text": "b"},
        ],
        source="s",
        reason="r",
    )
    mem.rollback_to_version(APP, USER, 30, mode="revert")
    mem.rollback_to_version(APP, USER, 100, mode="truncate")
    mem.rollback_to_version(APP, USER, 90, mode="revert")
    mem.commit(APP, USER, [{"op": "delete", "item_id": "twice"}], source="s", reason="r")
    mem.redact(APP, USER, "garden", reason="erase", by="text")
    mem.compact(APP, USER)
    answers = [
        mem.search(APP, USER, "trip dog detail", 10),
        mem.resolve(APP, USER, "undo the note about the garden", 5),
        mem.resolve_lexical(APP, USER, "recipe", 10),
        mem.snapshot(APP, USER),
        [(v.version_id, v.op, v.summary) for v in mem.versions(APP, USER)],
    ]
    assert mem.check_integrity(APP, USER) == []
    return answers


@pytest.mark.parametrize("path", ["function", "pipeline"])
def test_fast_writes_store_what_the_generic_path_stores(
    on_postgres: str, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    calls = {"function": 0, "pipeline": 0}

    def counting(module: Any, name: str) -> None:
        original = module.commit_writes

        def wrapped(*args: Any) -> Any:
            got = original(*args)
            calls[name] += got is not None
            return got

        monkeypatch.setattr(module, "commit_writes", wrapped)

    if path == "pipeline":  # the server function declines every write
        monkeypatch.setattr(commitfn, "commit_writes", lambda *a: None)
    else:
        counting(commitfn, "function")
    counting(fastwrite, "pipeline")
    with hash_store() as fast:
        fast_answers, fast_rows = _fill(fast), _rows(fast)
    if path == "function":  # every eligible commit took it, none fell back
        assert calls == {"function": 61, "pipeline": 0}
    else:
        assert calls["pipeline"] == 61
    monkeypatch.undo()
    monkeypatch.setattr(PostgresBackend, "commit_fast", lambda *a, **k: None)
    monkeypatch.delattr(PostgresBackend, "revert_items")
    with hash_store() as slow:
        slow_answers, slow_rows = _fill(slow), _rows(slow)
    for table in TABLES:
        assert fast_rows[table] == slow_rows[table], table
    assert fast_answers == slow_answers


def _df_is_counted(mem: Any) -> None:
    """The stored document counts are the postings' (what BM25 read before they were kept)."""
    for ix in ("item", "desc"):
        kept = mem.conn.execute(f"SELECT scope_id, term, n FROM {ix}_df").fetchall()
        counted = mem.conn.execute(
            f"SELECT scope_id, term, count(*) FROM {ix}_terms GROUP BY 1, 2"
        ).fetchall()
        assert sorted(kept) == sorted(counted), ix


def test_document_counts_follow_writes_redaction_and_compaction(on_postgres: str) -> None:
    with hash_store() as mem:
        _fill(mem)
        _df_is_counted(mem)


def test_a_pg1_store_is_migrated_on_open(on_postgres: str) -> None:
    from chronomem import ChronoMem, HashEmbedder

    url = on_postgres
    with ChronoMem(url, embedder=HashEmbedder()) as mem:
        _fill(mem)
        before = mem.resolve_lexical(APP, USER, "recipe trip", 10)
        mem.conn.execute("DROP TABLE item_df, desc_df")  # as a pg1 store has it
        mem.conn.execute("UPDATE meta SET value = 'pg1' WHERE key = 'schema'")
    with ChronoMem(url, embedder=HashEmbedder()) as mem:
        _df_is_counted(mem)
        assert mem.resolve_lexical(APP, USER, "recipe trip", 10) == before
        assert mem.conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (
            SCHEMA_VERSION,
        )


def test_a_pg2_store_gains_the_commit_function_on_open(
    on_postgres: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronomem import ChronoMem, HashEmbedder

    url = on_postgres
    with ChronoMem(url, embedder=HashEmbedder()) as mem:
        mem.commit(
            APP, USER, [{"op": "add", "item_id": "a", "text": "Ann"}], source="s", reason="r"
        )
        mem.conn.execute("DROP FUNCTION chronomem_commit(jsonb, float4[])")  # as pg2 has it
        mem.conn.execute("UPDATE meta SET value = 'pg2' WHERE key = 'schema'")
    monkeypatch.setattr(fastwrite, "commit_writes", _never)
    with ChronoMem(url, embedder=HashEmbedder()) as mem:
        mem.commit(APP, USER, [{"op": "add", "item_id": "b", "text": "Bo"}], source="s", reason="r")
        assert mem.snapshot(APP, USER) == {"a": "Ann", "b": "Bo"}
        assert mem.check_integrity(APP, USER) == []


def _counts_stay_exact_across_a_fold(mem) -> None:
    """Commit past a fold through the function, checking the per-term document counts
    against a direct count every 16 commits, then the store's integrity."""
    from chronomem.reads import find_scope

    db = mem._db
    sid = find_scope(db, APP, USER).scope_id
    for j, w in enumerate([None, *synthetic_writes(lexical.FOLD_EVERY, seed=6)]):
        if w is not None:  # the function's path, folding once on the way
            mem.commit(APP, USER, **w)
        if j % 16:
            continue
        for table, read in (("item_terms", db.item_stats), ("desc_terms", db.descriptor_stats)):
            rows = mem.conn.execute(f"SELECT term, count(*) FROM {table} GROUP BY term")
            want = {t: int(n) for t, n in rows.fetchall()}
            terms = sorted(want)[:40] + ["nosuchterm"]
            assert read(sid, terms)[2] == [want.get(t, 0) for t in terms], table
    assert mem.check_integrity(APP, USER) == []


def test_a_pg5_store_gains_fold_marks_and_the_two_argument_function_on_open(
    on_postgres: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronomem import ChronoMem, HashEmbedder

    url = on_postgres
    with ChronoMem(url, embedder=HashEmbedder()) as mem:
        # a fold on the way, and documents written since it: uncounted
        for w in synthetic_writes(lexical.FOLD_EVERY + 20, seed=4):
            mem.commit(APP, USER, **w)
        # as pg5 kept the same store: folded documents flagged counted, no marks, and
        # a commit function taking everything, vectors included, as one JSON argument
        for docs, mark in (("item_docs", "item_mark"), ("desc_docs", "desc_mark")):
            mem.conn.execute(
                f"UPDATE {docs} d SET counted = true FROM scopes s WHERE "
                f"s.scope_id = d.scope_id AND NOT d.counted AND d.doc <= s.{mark}"
            )
        mem.conn.execute("ALTER TABLE scopes DROP COLUMN item_mark, DROP COLUMN desc_mark")
        mem.conn.execute("DROP FUNCTION chronomem_commit(jsonb, float4[])")
        mem.conn.execute(
            "CREATE FUNCTION chronomem_commit(p jsonb, OUT vids bigint[], OUT changed bigint) "
            "LANGUAGE sql AS $$ SELECT NULL::bigint[], 0::bigint $$"
        )
        mem.conn.execute("UPDATE meta SET value = 'pg5' WHERE key = 'schema'")
    monkeypatch.setattr(fastwrite, "commit_writes", _never)
    with ChronoMem(url, embedder=HashEmbedder()) as mem:
        schema = mem.conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        assert schema == (SCHEMA_VERSION,)
        signatures = mem.conn.execute(
            "SELECT pg_get_function_identity_arguments(p.oid) FROM pg_proc p JOIN pg_namespace n "
            "ON n.oid = p.pronamespace WHERE p.proname = 'chronomem_commit' "
            "AND n.nspname = current_schema()"
        ).fetchall()
        assert [s for (s,) in signatures] == [
            "p jsonb, vecs real[], OUT vids bigint[], OUT changed bigint"
        ]
        _counts_stay_exact_across_a_fold(mem)


def test_a_pg6_store_trades_its_two_document_indexes_for_one_on_open(
    on_postgres: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronomem import ChronoMem, HashEmbedder

    url = on_postgres
    with ChronoMem(url, embedder=HashEmbedder()) as mem:
        for w in synthetic_writes(lexical.FOLD_EVERY + 20, seed=4):
            mem.commit(APP, USER, **w)
        # as pg6 kept the same store: an index on the scope, a partial one on (scope, key)
        for docs in ("item_docs", "desc_docs"):
            mem.conn.execute(f"DROP INDEX {docs}_scope_doc")
            mem.conn.execute(f"CREATE INDEX {docs}_scope ON {docs} (scope_id)")
            mem.conn.execute(
                f"CREATE INDEX {docs}_uncounted ON {docs} (scope_id, doc) WHERE NOT counted"
            )
        mem.conn.execute("UPDATE meta SET value = 'pg6' WHERE key = 'schema'")
    monkeypatch.setattr(fastwrite, "commit_writes", _never)
    with ChronoMem(url, embedder=HashEmbedder()) as mem:
        schema = mem.conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        assert schema == (SCHEMA_VERSION,)
        indexes = mem.conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename IN ('item_docs', 'desc_docs') ORDER BY indexname"
        ).fetchall()
        assert [i for (i,) in indexes] == [
            "desc_docs_pkey", "desc_docs_scope_doc", "item_docs_pkey", "item_docs_scope_doc"
        ]  # fmt: skip
        _counts_stay_exact_across_a_fold(mem)


def _never(*args: Any) -> None:
    raise AssertionError("the commit function should have taken this write")


def test_a_pg3_store_learns_its_documents_terms_on_open(on_postgres: str) -> None:
    from chronomem import ChronoMem, HashEmbedder

    url = on_postgres
    with ChronoMem(url, embedder=HashEmbedder()) as mem:
        _fill(mem)
        for w in synthetic_writes(20, seed=5):  # some documents left uncounted
            mem.commit(APP, USER, **w)
        before = mem.resolve_lexical(APP, USER, "recipe trip", 10)
        scopes = [r[0] for r in mem.conn.execute("SELECT scope_id FROM scopes").fetchall()]
        for ix in (lexical.ITEMS, lexical.DESCRIPTORS):  # as a pg3 store has them
            lexical.fold(mem.conn, ix, scopes)
            mem.conn.execute(f"ALTER TABLE {ix.docs} DROP COLUMN counted, DROP COLUMN terms")
            mem.conn.execute(f"CREATE INDEX {ix.terms}_doc ON {ix.terms} (doc)")
        mem.conn.execute("ALTER TABLE scopes DROP COLUMN uncounted")
        mem.conn.execute("UPDATE meta SET value = 'pg3' WHERE key = 'schema'")
    with ChronoMem(url, embedder=HashEmbedder()) as mem:
        for ix in (lexical.ITEMS, lexical.DESCRIPTORS):
            held = mem.conn.execute(
                f"SELECT d.doc, u.term FROM {ix.docs} d, unnest(d.terms) AS u(term)"
            ).fetchall()
            posted = mem.conn.execute(f"SELECT doc, term FROM {ix.terms}").fetchall()
            assert held and sorted(held) == sorted(posted), ix.docs
        gone = mem.conn.execute(
            "SELECT indexname FROM pg_indexes WHERE indexname IN ('item_terms_doc', "
            "'desc_terms_doc') AND schemaname = current_schema()"
        ).fetchall()
        assert gone == []
        assert mem.resolve_lexical(APP, USER, "recipe trip", 10) == before
        _df_is_counted(mem)
        mem.commit(APP, USER, **synthetic_writes(1, seed=6)[0])
        assert mem.check_integrity(APP, USER) == []
