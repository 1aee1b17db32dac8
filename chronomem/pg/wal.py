"""Retiring the write-ahead log that still holds erased content (an operator's step).

Why: a redaction deletes rows and rewrites the tables (``VACUUM FULL``), but the WAL
segments written before it still hold the inserted rows, and a ``CHECKPOINT`` alone
keeps the current segment (the one the secret was written to) as long as new WAL goes
there. :func:`retire_wal` ends that segment (``pg_switch_wal()``) and checkpoints, so
the redo point moves past every segment written before the redaction and the server
retires them at the checkpoint's end. Retired segments are deleted only with
``wal_recycle = off``; with the default (``on``) they are renamed for reuse and keep
their bytes until new WAL overwrites them, so :func:`retire_wal` reports the setting.

A segment recycled before ``wal_recycle = off`` was set sits *ahead* of the current one
under a future name, old bytes and all, and one switch does not reach it. So
:func:`retire_wal` lists the segment files at or ahead of the current one when it starts
and switches and checkpoints until WAL has moved past the last of them (each checkpoint
writes WAL, so each switch advances one segment): every such file has then been either
written over or retired, and with ``wal_recycle = off`` retired means deleted.

What this cannot reach, and reports where the server can tell: segments kept for a
WAL archive (``archive_mode``: the archive keeps its copies as long as it keeps them),
for replication slots or ``wal_keep_size``; replicas (each has its own ``pg_wal``: run
the same step there after it replayed the redaction); base backups and dumps.

Needs a superuser, or a role granted ``pg_checkpoint`` (PostgreSQL 15) and
``EXECUTE`` on ``pg_switch_wal()``. Command line: ``python -m
chronomem.pg.wal postgresql://admin@host/db``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any


def retire_wal(conn: Any, max_rounds: int = 256) -> dict[str, Any]:
    """Switch to a new WAL segment and checkpoint on ``conn`` (a psycopg connection in
    autocommit mode, or a store's :class:`~.conn.PgConn`), again until WAL has moved
    past every segment file that existed ahead of the current one (at most
    ``max_rounds`` times); returns what was done (``rounds``,
    ``passed_recycled_segments``) and what still keeps old WAL
    (``deleted_not_recycled``, ``archive_mode``, ``wal_keep_size``,
    ``replication_slots``)."""

    def one(sql: str) -> Any:
        return conn.execute(sql).fetchone()[0]

    def current() -> str:
        return str(one("SELECT pg_walfile_name(pg_current_wal_lsn())"))

    before = current()
    # Segment names sort in WAL order within a timeline: a name at or past the current
    # one is a recycled file waiting for reuse (it may hold old rows).
    files = conn.execute(
        "SELECT name FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$' ORDER BY name"
    ).fetchall()
    last = max([before, *(str(r[0]) for r in files if str(r[0])[:8] == before[:8])])
    rounds = 0
    while True:
        one("SELECT pg_switch_wal()::text")  # the segment holding the erased rows ends here
        conn.execute("CHECKPOINT")  # redo point in the new segment: older ones are retired
        rounds += 1
        now = current()
        if now > last or rounds >= max_rounds:
            break
    return {
        "segment_ended": before,
        "current_segment": now,
        "rounds": rounds,
        "passed_recycled_segments": now > last,
        "deleted_not_recycled": one("SHOW wal_recycle") == "off",
        "archive_mode": one("SHOW archive_mode"),
        "wal_keep_size": one("SHOW wal_keep_size"),
        "replication_slots": int(one("SELECT count(*) FROM pg_replication_slots")),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m chronomem.pg.wal URL``: :func:`retire_wal` on that server."""
    import psycopg

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m chronomem.pg.wal postgresql://admin@host:port/db")
        return 2
    with psycopg.connect(args[0], autocommit=True) as conn:
        print(json.dumps(retire_wal(conn), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
