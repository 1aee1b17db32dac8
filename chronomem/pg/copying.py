"""Copies of a PostgreSQL store: into a new schema of the same database (one server-side
transaction), or into another database (``COPY`` streamed through the client).

Both read the source in one snapshot, so a copy is one state of the store even while
other processes write. Tables other than ChronoMem's own (the repair track's provenance,
the ADK ledger) are copied too; the shared embedding table is not (it is a cache).
"""

from __future__ import annotations

from typing import Any

from chronomem.pg import commitfn
from chronomem.pg import schema as ddl
from chronomem.pg.conn import PgConn, quote_ident

_NOT_COPIED = ("meta", "embeddings")


def tables(conn: PgConn, schema: str) -> list[str]:
    """The tables of ``schema`` a copy carries (a partitioned table's partitions with it)."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = ? AND c.relkind IN ('r', 'p') AND NOT c.relispartition "
        "ORDER BY c.relname",
        (schema,),
    ).fetchall()
    return [r[0] for r in rows if r[0] not in _NOT_COPIED]


def files(conn: PgConn, schema: str) -> list[str]:
    """The tables of ``schema`` that have files (a partitioned table's partitions, not
    the table itself): what a rewrite names."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = ? AND c.relkind = 'r' ORDER BY c.relname",
        (schema,),
    ).fetchall()
    return [r[0] for r in rows]


def create_tables(conn: PgConn) -> None:
    """ChronoMem's tables in the current schema, content columns without statistics."""
    for stmt in ddl.create_sql():
        conn.execute(stmt)
    commitfn.install(conn)
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema', ?)", (ddl.SCHEMA_VERSION,))


def into_schema(conn: PgConn, src_schema: str, name: str) -> None:
    """Inside the caller's REPEATABLE READ transaction: schema ``name`` := a copy."""
    src, dst = quote_ident(src_schema), quote_ident(name)
    carried = tables(conn, src_schema)
    conn.execute(f"CREATE SCHEMA {dst}")
    conn.execute(f"SET LOCAL search_path TO {dst}")
    create_tables(conn)
    # Rows first, indexes after: building an index over the copied rows is several times
    # faster than updating it row by row (a 100,000-write store took minutes to clone).
    indexes = _drop_indexes(conn, name)
    for t in carried:
        if t not in ddl.TABLES:  # another component's table: same definition
            conn.execute(f"CREATE TABLE {dst}.{t} (LIKE {src}.{t} INCLUDING ALL)")
        conn.execute(f"INSERT INTO {dst}.{t} SELECT * FROM {src}.{t}")
    for stmt in indexes:
        conn.execute(stmt)
    reset_identities(conn, name)
    analyze(conn, name)


def _drop_indexes(conn: PgConn, schema: str) -> list[str]:
    """Drop the indexes (and the key constraints they back) of ChronoMem's tables in
    ``schema``, but ``meta``'s; returns the statements that build them again."""
    rows = conn.execute(
        "SELECT c.relname, i.relname, pg_get_indexdef(i.oid), k.conname, "
        "pg_get_constraintdef(k.oid) FROM pg_index x "
        "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "LEFT JOIN pg_constraint k ON k.conindid = i.oid AND k.conrelid = c.oid "
        "WHERE n.nspname = ? AND c.relname = ANY(?) AND c.relname <> 'meta' "
        "ORDER BY c.relname, i.relname",
        (schema, [t for t in ddl.TABLES if t != "embeddings"]),
    ).fetchall()
    q = quote_ident(schema)
    again = []
    for table, index, indexdef, constraint, condef in rows:
        if constraint is not None:
            conn.execute(
                f"ALTER TABLE {q}.{quote_ident(table)} DROP CONSTRAINT {quote_ident(constraint)}"
            )
            again.append(
                f"ALTER TABLE {q}.{quote_ident(table)} ADD CONSTRAINT {quote_ident(constraint)} {condef}"
            )
        else:
            conn.execute(f"DROP INDEX {q}.{quote_ident(index)}")
            # a partitioned table's index reads "ON ONLY": built so, its partitions
            # would have none
            again.append(indexdef.replace(" ON ONLY ", " ON ", 1))
    return again


def to_database(src: PgConn, src_schema: str, dst: PgConn, dst_schema: str) -> None:
    """Stream every carried table from ``src`` (one snapshot) into ``dst`` (one
    transaction, ChronoMem's tables already created and empty)."""
    for t in tables(src, src_schema):
        if t not in ddl.TABLES:
            cols = src.execute(
                "SELECT string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, "
                "a.atttypmod), ', ' ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = "
                "(quote_ident(?) || '.' || quote_ident(?))::regclass AND a.attnum > 0 "
                "AND NOT a.attisdropped",
                (src_schema, t),
            ).fetchone()[0]
            dst.execute(f"CREATE TABLE IF NOT EXISTS {t} ({cols})")
        with (
            src.driver_errors(),
            dst.driver_errors(),
            # a partitioned table copies out only as a query
            src.raw.cursor().copy(f"COPY (SELECT * FROM {t}) TO STDOUT (FORMAT binary)") as out,
            dst.raw.cursor().copy(f"COPY {t} FROM STDIN (FORMAT binary)") as into,
        ):
            for block in out:
                into.write(block)
    reset_identities(dst, dst_schema)
    analyze(dst, dst_schema)


def analyze(conn: Any, schema: str) -> None:
    """Planner statistics for the copy's ChronoMem tables: freshly filled tables have
    none until autovacuum gets to them, and without them the planner nests loops over
    whole tables (a revert's diff on a fresh 3,000-write clone: 1.5 s, 2 ms after
    ``ANALYZE``). Content columns have statistics off, so none is copied into them."""
    for t in ddl.TABLES:
        conn.execute(f"ANALYZE {quote_ident(schema)}.{t}")


def reset_identities(conn: Any, schema: str) -> None:
    """Move every identity sequence of ``schema`` past the copied rows."""
    rows = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = ? "
        "AND is_identity = 'YES'",
        (schema,),
    ).fetchall()
    for table, col in rows:
        qualified = f"{quote_ident(schema)}.{quote_ident(table)}"
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence(?, ?), coalesce(max({quote_ident(col)}), 0) "
            f"+ 1, false) FROM {qualified}",
            (qualified, col),
        )
