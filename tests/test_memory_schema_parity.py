"""The SQLite and PostgreSQL stores hold the same tables and columns (issue 29): names,
order, types mapped between the two dialects and NOT NULL, read from real stores of
both backends. What differs on purpose is listed here, each with its reason; anything
else that differs fails, so a column added to one DDL must be added to the other (or
listed below)."""

from __future__ import annotations

import pytest

from chronomem import ChronoMem
from chronomem.pg.schema import TABLES

# SQLite declared type -> the PostgreSQL types it stands for.
TYPES = {
    "INTEGER": {"bigint", "integer"},  # SQLite integers are 64-bit; small counters are int4
    "TEXT": {"text"},
    "REAL": {"double precision"},
    "BLOB": {"ARRAY"},  # desc_vecs.vec: packed float32 on SQLite, float4[] on PostgreSQL
}
# The lexical index: FTS5 virtual tables on SQLite; term statistics in plain tables on
# PostgreSQL (see chronomem/pg/lexical.py), with per-scope totals on ``scopes``.
SQLITE_ONLY = {"item_fts", "desc_fts"}
PG_ONLY = {"item_docs", "item_terms", "item_df", "desc_docs", "desc_terms", "desc_df"}
# ``uncounted``: the commit function's writes since it last folded the lexical
# document counts (chronomem/pg/schema.py's LEANER_LEXICON); ``item_mark``/``desc_mark``:
# how far the folds have counted (FOLD_MARKS, pg6)
PG_ONLY_COLUMNS = {
    "scopes": ["item_n", "item_tok", "desc_n", "desc_tok", "uncounted", "item_mark", "desc_mark"]
}
# The embedding cache every process of every host shares lives in the server; a SQLite
# store's cache is a file in the run's cache folder (memory/vector_cache.py).
PG_ONLY |= {"embeddings"}
FTS5_SHADOW = ("_data", "_idx", "_content", "_docsize", "_config")

Columns = list[tuple[str, str, bool]]  # (name, type, not null) in table order


def _sqlite_tables() -> dict[str, Columns]:
    mem = ChronoMem(":memory:")
    try:
        names = [
            r[0]
            for r in mem.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            ).fetchall()
        ]
        out = {}
        for name in names:
            if any(name.startswith(f"{v}{s}") for v in SQLITE_ONLY for s in FTS5_SHADOW):
                continue  # FTS5's own storage of a virtual table
            rows = mem.conn.execute(f"PRAGMA table_info({name})").fetchall()
            # a PRIMARY KEY column counts as NOT NULL, as PostgreSQL makes it (SQLite
            # enforces it for rowid keys and WITHOUT ROWID tables, not meta's TEXT key)
            out[name] = [(r[1], r[2].upper(), bool(r[3]) or bool(r[5])) for r in rows]
        return out
    finally:
        mem.close()


def _pg_tables(url: str) -> dict[str, Columns]:
    mem = ChronoMem(url)
    try:
        schema = mem.backend.schema
        rows = mem.conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM "
            "information_schema.columns WHERE table_schema = ? AND table_name NOT IN "
            # a partition is its table's (same columns by construction)
            "(SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = ? AND c.relispartition) ORDER BY table_name, ordinal_position",
            (schema, schema),
        ).fetchall()
    finally:
        mem.close()
    out: dict[str, Columns] = {}
    for table, column, kind, nullable in rows:
        out.setdefault(table, []).append((column, kind, nullable == "NO"))
    return out


def test_both_backends_hold_the_same_tables_and_columns(pg_url: str) -> None:
    lite, pg = _sqlite_tables(), _pg_tables(pg_url)
    assert set(lite) | SQLITE_ONLY == set(lite) and set(pg) == set(TABLES)
    assert set(lite) - SQLITE_ONLY == set(pg) - PG_ONLY
    for table in sorted(set(lite) - SQLITE_ONLY):
        extra = PG_ONLY_COLUMNS.get(table, [])
        theirs = [c for c in pg[table] if c[0] not in extra]
        assert [c[0] for c in lite[table]] == [c[0] for c in theirs], table
        assert [c[0] for c in pg[table] if c[0] in extra] == extra, table
        for (name, kind, not_null), (_, pg_kind, pg_not_null) in zip(
            lite[table], theirs, strict=True
        ):
            assert pg_kind in TYPES[kind], (table, name, kind, pg_kind)
            assert not_null == pg_not_null, (table, name)


@pytest.mark.parametrize("table", sorted(SQLITE_ONLY))
def test_the_fts5_tables_index_tag_and_body(table: str) -> None:
    mem = ChronoMem(":memory:")
    try:
        cols = [r[1] for r in mem.conn.execute(f"PRAGMA table_info({table})").fetchall()]
    finally:
        mem.close()
    assert cols == ["tag", "body"]
