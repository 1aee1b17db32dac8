"""PostgreSQL schema pg5: the lexical index, descriptor vectors and texts are split into
hash partitions, and a store written before (pg4, every table whole) is rebuilt so on
open, row for row, with the same answers."""

from __future__ import annotations

import re
from typing import Any

from chronobench.bench.synthetic import synthetic_writes
from chronomem import ChronoMem, HashEmbedder
from chronomem.pg import commitfn, copying
from chronomem.pg import schema as ddl
from chronomem.pg.locations import with_schema


def _rows(mem: Any) -> dict[str, list[str]]:
    return {
        t: sorted(repr(r) for r in mem.conn.execute(f"SELECT * FROM {t}").fetchall())
        for t in ddl.TABLES
        if t != "meta"
    }


def _kinds(mem: Any) -> dict[str, tuple[str, int]]:
    """table -> (relkind, number of partitions)."""
    rows = mem.conn.execute(
        "SELECT c.relname, c.relkind::text, (SELECT count(*) FROM pg_inherits h "
        "WHERE h.inhparent = c.oid) FROM pg_class c JOIN pg_namespace n ON "
        "n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') "
        "AND NOT c.relispartition"
    ).fetchall()
    return {r[0]: (r[1], int(r[2])) for r in rows}


def _without_marks(mem: ChronoMem) -> None:
    """The same store as pg4 and pg5 kept it: each folded document says ``counted``
    and the scopes' fold marks (pg6) are 0; the same documents uncounted either way."""
    with mem.backend.transaction():
        for docs, mark in (("item_docs", "item_mark"), ("desc_docs", "desc_mark")):
            mem.conn.execute(
                f"UPDATE {docs} d SET counted = true FROM scopes s WHERE "
                f"s.scope_id = d.scope_id AND NOT d.counted AND d.doc <= s.{mark}"
            )
        mem.conn.execute("UPDATE scopes SET item_mark = 0, desc_mark = 0")


def _as_pg4(mem: ChronoMem, schema: str) -> None:
    """A copy of ``mem``'s store in ``schema`` as schema pg4 kept it: no partitions (the
    store's fold marks taken out first, :func:`_without_marks`)."""
    whole = re.sub(r"\) PARTITION BY HASH \(\w+\);", ");", ddl.DDL)
    assert "PARTITION" not in whole
    conn, src = mem.conn, mem.backend.schema
    with mem.backend.transaction():
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET LOCAL search_path TO {schema}")
        for stmt in [whole, ddl.LEANER_LEXICON, *ddl.no_statistics_sql()]:
            conn.execute(stmt)
        commitfn.install(conn)
        for t in ddl.TABLES:  # the columns pg4 had
            cols = ", ".join(
                '"' + r[0] + '"'
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = ? "
                    "AND table_name = ? ORDER BY ordinal_position",
                    (schema, t),
                ).fetchall()
            )
            conn.execute(f"INSERT INTO {schema}.{t} ({cols}) SELECT {cols} FROM {src}.{t}")
        conn.execute(f"UPDATE {schema}.meta SET value = 'pg4' WHERE key = 'schema'")
        copying.reset_identities(conn, schema)


def test_a_new_store_holds_its_content_tables_in_partitions(pg_url: str) -> None:
    with ChronoMem(pg_url, embedder=HashEmbedder()) as mem:
        kinds = _kinds(mem)
    for table in ddl.TABLES:
        want = ("p", ddl.PARTITIONS) if table in ddl.PARTITIONED else ("r", 0)
        assert kinds[table] == want, table


def test_a_pg4_store_is_partitioned_on_open_with_its_rows_and_answers(pg_url: str) -> None:
    writes = synthetic_writes(80)
    with ChronoMem(pg_url, embedder=HashEmbedder()) as mem:
        mem.commit_many("app", "u", writes[:40])
        for w in writes[40:]:
            mem.commit("app", "u", **w)
        mem.rollback_to_version("app", "u", 50, mode="revert")
        _without_marks(mem)
        rows = _rows(mem)
        found = mem.resolve_lexical("app", "u", "recipe trip", 10)
        head = mem.snapshot("app", "u")
        _as_pg4(mem, "older")
    with ChronoMem(with_schema(pg_url, "older"), embedder=HashEmbedder()) as old:
        assert old.conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (
            ddl.SCHEMA_VERSION,
        )
        kinds = _kinds(old)
        assert all(kinds[t] == ("p", ddl.PARTITIONS) for t in ddl.PARTITIONED)
        assert not any(t.endswith("_pg4") for t in kinds)  # the old tables are gone
        assert _rows(old) == rows
        assert old.resolve_lexical("app", "u", "recipe trip", 10) == found
        assert old.snapshot("app", "u") == head
        assert old.check_integrity("app", "u") == []
        # writes, and the erasure that rewrites partitions, go on
        old.commit(
            "app", "u", [{"op": "add", "item_id": "k", "text": "key zq9"}], source="s", reason="r"
        )
        old.redact("app", "u", "k", reason="asked", by="id")
        assert "k" not in old.snapshot("app", "u")
        assert old.check_integrity("app", "u") == []
