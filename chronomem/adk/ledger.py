"""Per-memory metadata the ADK service keeps beside the store: who, when, which session.

ChronoMem versions item *texts*; an ADK ``MemoryEntry`` also has an author, a
timestamp, a role and custom metadata. Those never change for a memory id, so they
live in one unversioned table, ``adk_memory_ledger``, in the store's own database (a
second connection: the same SQLite file, or the same PostgreSQL schema; an in-memory
store gets an in-memory ledger). The ledger holds
no memory text. A row also records that an event id was ingested once, which is how
re-adding a session never brings back an event that was deleted or rolled back.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

_COLUMNS = """
    app TEXT NOT NULL, "user" TEXT NOT NULL, memory_id TEXT NOT NULL,
    session_id TEXT, author TEXT, timestamp TEXT, role TEXT,
    custom_metadata TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (app, "user", memory_id)"""
_SCHEMA = f"CREATE TABLE IF NOT EXISTS adk_memory_ledger ({_COLUMNS}) WITHOUT ROWID"
_PG_SCHEMA = f"CREATE TABLE IF NOT EXISTS adk_memory_ledger ({_COLUMNS})"
_CHUNK = 500  # ids per IN (...) query, under SQLite's variable limit


@dataclass(frozen=True)
class LedgerRow:
    """Metadata of one memory id."""

    memory_id: str
    session_id: str | None = None
    author: str | None = None
    timestamp: str | None = None
    role: str | None = None
    custom_metadata: dict[str, Any] = field(default_factory=dict)


class Ledger:
    """The ``adk_memory_ledger`` table on its own connection (thread-safe)."""

    def __init__(self, path: str, busy_timeout_ms: int = 60_000, *, schema: str | None = None):
        from chronomem.pg.locations import is_url

        conn: Any
        if is_url(path):  # the store's PostgreSQL schema, on a connection of our own
            from chronomem.pg.locations import ledger_connection

            conn = ledger_connection(path, schema, busy_timeout_ms)
            conn.execute(_PG_SCHEMA)
            self._begin = "BEGIN"
        else:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            # The store's durability contract (WAL + NORMAL: safe against process crashes).
            if path != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_SCHEMA)
            self._begin = "BEGIN IMMEDIATE"
        self._conn: Any = conn
        self._lock = threading.Lock()

    @property
    def conn(self) -> Any:
        """The open connection (raises once closed)."""
        if self._conn is None:
            raise RuntimeError("this memory service is closed")
        return self._conn

    def known(self, app: str, user: str, ids: Iterable[str]) -> set[str]:
        """The ids among ``ids`` that were ever recorded for (app, user)."""
        ids = list(dict.fromkeys(ids))
        out: set[str] = set()
        with self._lock:
            for i in range(0, len(ids), _CHUNK):
                part = ids[i : i + _CHUNK]
                out.update(
                    r[0]
                    for r in self.conn.execute(
                        'SELECT memory_id FROM adk_memory_ledger WHERE app = ? AND "user" = ? '
                        f"AND memory_id IN ({','.join('?' * len(part))})",
                        (app, user, *part),
                    )
                )
        return out

    def record(self, app: str, user: str, rows: Sequence[LedgerRow]) -> None:
        """Insert or replace the metadata of ``rows`` in one transaction."""
        if not rows:
            return
        data = [
            (
                app,
                user,
                r.memory_id,
                r.session_id,
                r.author,
                r.timestamp,
                r.role,
                json.dumps(r.custom_metadata, default=str, ensure_ascii=False),
            )
            for r in rows
        ]
        with self._lock:
            self.conn.execute(self._begin)
            try:
                self.conn.executemany(
                    'INSERT INTO adk_memory_ledger (app, "user", memory_id, session_id, author, '
                    "timestamp, role, custom_metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                    'ON CONFLICT (app, "user", memory_id) DO UPDATE SET session_id = '
                    "excluded.session_id, author = excluded.author, timestamp = "
                    "excluded.timestamp, role = excluded.role, custom_metadata = "
                    "excluded.custom_metadata",
                    data,
                )
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def get(self, app: str, user: str, ids: Iterable[str]) -> dict[str, LedgerRow]:
        """Metadata of ``ids`` (ids never recorded are absent)."""
        ids = list(dict.fromkeys(ids))
        out: dict[str, LedgerRow] = {}
        with self._lock:
            for i in range(0, len(ids), _CHUNK):
                part = ids[i : i + _CHUNK]
                for row in self.conn.execute(
                    "SELECT memory_id, session_id, author, timestamp, role, custom_metadata "
                    'FROM adk_memory_ledger WHERE app = ? AND "user" = ? '
                    f"AND memory_id IN ({','.join('?' * len(part))})",
                    (app, user, *part),
                ):
                    out[row[0]] = LedgerRow(*row[:5], json.loads(row[5] or "{}"))
        return out

    def forget(self, app: str, user: str, ids: Sequence[str]) -> None:
        """Remove the rows of ``ids`` (undoes a :meth:`record` whose commit failed)."""
        with self._lock:
            self.conn.executemany(
                'DELETE FROM adk_memory_ledger WHERE app = ? AND "user" = ? AND memory_id = ?',
                [(app, user, i) for i in ids],
            )

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
