"""Rewriting tables after an erasure (``VACUUM FULL``), on several connections at once.

Why: PostgreSQL never overwrites a deleted tuple in place, so erased bytes leave a
table's files only when the table (its TOAST table and its indexes) is rewritten, at a
cost linear in the table's size, not in what was erased, plus a fixed part: every new
file (heap, TOAST table, each index) is fsynced before the rewrite commits, and a
redaction changes about ten tables, so that is most of a small store's purge. One rewrite keeps one server core busy or waits on its fsyncs; on
:data:`LANES` connections (each ``VACUUM FULL`` locks only its own table) the server's
cores and the disk work side by side. A redaction by id, measured with the machine
loaded: at 10,000 writes 2.7-3.1 s on one connection, 1.6 s on two, 1.3-1.5 s on
four; at 300 writes 0.5-0.6 s on one, 0.4 s on four. Since the lexical index is
split into partitions (schema pg5) a compaction rewrites some fifty tables, small
ones, where waiting on fsyncs is most of the time; measured at 10,000 writes, loaded,
with 16 partitions per table: the purge 1.4-1.6 s on four connections, 0.74 s on
eight; a redaction by id 0.58-0.75 s on four, 0.46-0.53 s on eight.
Tables are dealt to the lanes largest first, each to the lane with fewest bytes so far.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from chronomem.pg.conn import PgConn, quote_ident
from chronomem.types import StoreBusyError, StoreConnectionError

LANES = 8  # connections rewriting at once (the store's own and up to seven more)


def lanes(sizes: dict[str, int], n: int = 2) -> list[list[str]]:
    """``sizes``' tables dealt to ``n`` lanes, largest first, each to the lightest lane."""
    out: list[list[str]] = [[] for _ in range(n)]
    load = [0] * n
    for name in sorted(sizes, key=lambda t: (-sizes[t], t)):
        k = load.index(min(load))
        out[k].append(name)
        load[k] += sizes[name]
    return [lane for lane in out if lane]


def rewrite(
    conn: PgConn, schema: str, tables: Sequence[str], second: Callable[[], PgConn]
) -> set[str]:
    """``VACUUM FULL`` each of ``schema``'s ``tables``; returns those whose lock wait
    timed out (another session held them). ``second`` opens another connection to the
    same database (one per lane but the first, closed at the end)."""
    if not tables:
        return set()
    rows = conn.execute(
        "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relname = ANY(?)",
        (schema, list(tables)),
    ).fetchall()
    sizes = {name: 0 for name in tables} | {r[0]: int(r[1]) for r in rows}
    if len(sizes) < 2 or LANES < 2:
        return _lane(conn, schema, sorted(sizes))
    first, *others = lanes(sizes, LANES)
    left: set[str] = set()
    orphaned: list[str] = []  # a lane whose connection could not open: the caller's runs it
    failure: list[BaseException] = []

    def run_other(tables: list[str]) -> None:
        try:
            helper = second()
        except StoreConnectionError:  # e.g. the server's max_connections reached
            orphaned.extend(tables)
            return
        try:
            left.update(_lane(helper, schema, tables))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(exc)
        finally:
            helper.close()

    workers = [
        threading.Thread(target=run_other, args=(t,), name="chronomem-purge") for t in others
    ]
    for w in workers:
        w.start()
    try:
        left.update(_lane(conn, schema, first))
    finally:
        for w in workers:
            w.join()
    if failure:
        raise failure[0]
    left.update(_lane(conn, schema, orphaned))
    return left


def _lane(conn: PgConn, schema: str, tables: Sequence[str]) -> set[str]:
    left: set[str] = set()
    for t in tables:
        try:
            conn.execute(f"VACUUM (FULL) {quote_ident(schema)}.{quote_ident(t)}")
        except StoreBusyError:  # the lock wait (lock_timeout) ran out
            left.add(t)
    return left
