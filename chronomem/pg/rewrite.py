"""Rewriting tables after an erasure (``VACUUM FULL``), on two connections at once.

Why: PostgreSQL never overwrites a deleted tuple in place, so erased bytes leave a
table's files only when the table (its TOAST table and its indexes) is rewritten, at a
cost linear in the table's size, not in what was erased. The two postings tables are
most of a store, and one rewrite keeps one server core busy; with a second connection
the other core rewrites the other tables meanwhile (each ``VACUUM FULL`` locks only its
own table). Tables are dealt to the two lanes largest first, each to the lane with
fewer bytes so far.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from chronomem.pg.conn import PgConn, quote_ident
from chronomem.types import StoreBusyError

# Below this many bytes in all, one connection: a second costs a connect (~10 ms).
PARALLEL_BYTES = 4 << 20


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
    same database, used when the tables are large enough to share."""
    if not tables:
        return set()
    rows = conn.execute(
        "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relname = ANY(?)",
        (schema, list(tables)),
    ).fetchall()
    sizes = {name: 0 for name in tables} | {r[0]: int(r[1]) for r in rows}
    if len(sizes) < 2 or sum(sizes.values()) < PARALLEL_BYTES:
        return _lane(conn, schema, sorted(sizes))
    first, other = lanes(sizes)
    left: set[str] = set()
    failure: list[BaseException] = []

    def run_other() -> None:
        try:
            helper = second()
            try:
                left.update(_lane(helper, schema, other))
            finally:
                helper.close()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=run_other, name="chronomem-purge")
    worker.start()
    try:
        left.update(_lane(conn, schema, first))
    finally:
        worker.join()
    if failure:
        raise failure[0]
    return left


def _lane(conn: PgConn, schema: str, tables: Sequence[str]) -> set[str]:
    left: set[str] = set()
    for t in tables:
        try:
            conn.execute(f"VACUUM (FULL) {quote_ident(schema)}.{quote_ident(t)}")
        except StoreBusyError:  # the lock wait (lock_timeout) ran out
            left.add(t)
    return left
