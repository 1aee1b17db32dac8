"""The SQLite backend of ChronoMem: schema, connection settings, FTS5 and vector tables.

Implements :class:`chronomem.backend.Backend`. The lexical indexes are FTS5
tables (``item_fts``, ``desc_fts``; porter tokenizer) whose ``tag`` column holds
:func:`scope_tag`, so one MATCH stays inside one scope; scores are ``-bm25`` with
the tag column weighted 0 (their search and statistics: :mod:`chronomem.sqlite_fts`). Descriptor vectors are float32 blobs in ``desc_vecs``.
Concurrency: WAL mode, a busy timeout, and writes in ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from chronomem.sql import visible
from chronomem.sqlite_fts import SQLiteLexicon, scope_tag

__all__ = ["SCHEMA", "SCHEMA_VERSION", "SQLiteBackend", "connect", "scope_tag"]

SCHEMA_VERSION = "2"  # 2: never-reused seqs + hidden ranges (O(1) truncate)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scopes (
    scope_id INTEGER PRIMARY KEY,
    app TEXT NOT NULL, user TEXT NOT NULL,
    head_vid INTEGER NOT NULL DEFAULT 0, head_seq INTEGER NOT NULL DEFAULT 0,
    next_vid INTEGER NOT NULL DEFAULT 1, next_seq INTEGER NOT NULL DEFAULT 1,
    gen INTEGER NOT NULL DEFAULT 0,
    UNIQUE (app, user)
);
CREATE TABLE IF NOT EXISTS hidden (
    scope_id INTEGER NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL,
    PRIMARY KEY (scope_id, hi)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS versions (
    vrow INTEGER PRIMARY KEY,
    scope_id INTEGER NOT NULL, version_id INTEGER NOT NULL, seq INTEGER NOT NULL,
    parent INTEGER, op TEXT NOT NULL, summary TEXT, labels TEXT NOT NULL DEFAULT '{}',
    source TEXT, reason TEXT, created REAL NOT NULL, valid_time TEXT,
    descriptor TEXT NOT NULL DEFAULT '',
    UNIQUE (scope_id, version_id), UNIQUE (scope_id, seq)
);
CREATE TABLE IF NOT EXISTS events (
    event_id INTEGER PRIMARY KEY,
    scope_id INTEGER NOT NULL, version_id INTEGER NOT NULL, op TEXT NOT NULL,
    item_id TEXT NOT NULL, hash TEXT, meta TEXT NOT NULL DEFAULT '{}',
    source TEXT, reason TEXT, recorded REAL NOT NULL, valid_time TEXT,
    redacted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS events_scope ON events (scope_id, version_id);
CREATE INDEX IF NOT EXISTS events_item ON events (scope_id, item_id);
CREATE TABLE IF NOT EXISTS blobs (
    scope_id INTEGER NOT NULL, hash TEXT NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (scope_id, hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS spans (
    span_id INTEGER PRIMARY KEY,
    scope_id INTEGER NOT NULL, item_id TEXT NOT NULL, hash TEXT NOT NULL,
    from_seq INTEGER NOT NULL, to_seq INTEGER
);
CREATE INDEX IF NOT EXISTS spans_open ON spans (scope_id, item_id, to_seq);
CREATE INDEX IF NOT EXISTS spans_from ON spans (scope_id, from_seq);
CREATE INDEX IF NOT EXISTS spans_to ON spans (scope_id, to_seq);
CREATE INDEX IF NOT EXISTS spans_hash ON spans (scope_id, hash);
CREATE VIRTUAL TABLE IF NOT EXISTS item_fts USING fts5 (
    tag, body, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS desc_fts USING fts5 (
    tag, body, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS desc_vecs (
    vrow INTEGER NOT NULL, chunk INTEGER NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY (vrow, chunk)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS answers (
    answer_id INTEGER PRIMARY KEY, scope_id INTEGER NOT NULL, text TEXT NOT NULL,
    created REAL NOT NULL, head_vid INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS answer_items (
    answer_id INTEGER NOT NULL, item_id TEXT NOT NULL, hash TEXT,
    PRIMARY KEY (answer_id, item_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    audit_id INTEGER PRIMARY KEY, scope_id INTEGER NOT NULL, action TEXT NOT NULL,
    detail TEXT NOT NULL, source TEXT, reason TEXT, recorded REAL NOT NULL
);
"""


def connect(path: str, *, busy_timeout_ms: int = 60_000) -> sqlite3.Connection:
    """Open ``path`` in WAL mode with a busy timeout and create the schema.

    ``isolation_level=None`` leaves transaction control to the store, which opens
    every write with ``BEGIN IMMEDIATE`` so writers queue instead of deadlocking.
    """
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=60)
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    if path != ":memory:" and not path.startswith("file::memory:"):
        conn.execute("PRAGMA journal_mode = WAL")
    # NORMAL in WAL mode is durable against process crashes (our atomicity contract);
    # only an OS crash can lose the last transactions, never corrupt the store.
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        conn.executescript(SCHEMA)
    except sqlite3.OperationalError as exc:  # pragma: no cover - depends on the build
        if "fts5" in str(exc).lower():
            raise RuntimeError(
                "this Python's sqlite3 lacks FTS5; install a Python built with FTS5 enabled"
            ) from exc
        raise
    _check_schema_version(conn, path)
    return conn


def _check_schema_version(conn: sqlite3.Connection, path: str) -> None:
    cols = {r[1] for r in conn.execute("PRAGMA table_info(scopes)")}
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is None and "next_seq" in cols:
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,)
        )
    elif row is None or row[0] != SCHEMA_VERSION:
        conn.close()
        raise RuntimeError(
            f"{path}: ChronoMem store schema {row[0] if row else '1'} is not the supported "
            f"schema {SCHEMA_VERSION}; re-ingest the memories into a new store file"
        )


class SQLiteBackend(SQLiteLexicon):
    """One SQLite database file (or ``":memory:"``) holding ChronoMem stores.

    The lexical-search methods come from :class:`~chronomem.sqlite_fts.SQLiteLexicon`.
    """

    def __init__(self, path: str, *, busy_timeout_ms: int = 60_000) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.lock = threading.RLock()
        self._conn: sqlite3.Connection | None = connect(path, busy_timeout_ms=busy_timeout_ms)
        self._vocab = False  # the temp fts5vocab tables created on this connection
        self._stats: dict[str, tuple[Any, tuple[int, int], dict[str, int]]] = {}

    # -- connection and transactions ---------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection (raises once the store is closed)."""
        if self._conn is None:
            raise RuntimeError("this ChronoMem store is closed")
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled back on any exception."""
        with self.lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def read_snapshot(self) -> Iterator[sqlite3.Connection]:
        """One read transaction (one WAL snapshot). Inside a transaction already (a
        read nested in a read, or in a write) the block joins it: that one already
        sees one state."""
        with self.lock:
            conn = self.conn
            if conn.in_transaction:
                yield conn
                return
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    def lock_scope(self, scope_id: int) -> None:
        """Nothing to do: ``BEGIN IMMEDIATE`` already excludes every other writer."""

    def copy(self, path: str) -> SQLiteBackend:
        """A copy made with SQLite's backup API (``path`` must be new or ``":memory:"``)."""
        if path != ":memory:" and os.path.exists(path) and os.path.getsize(path) > 0:
            raise FileExistsError(f"clone target {path} exists; pass a new path or ':memory:'")
        other = SQLiteBackend(path, busy_timeout_ms=self.busy_timeout_ms)
        with self.lock:
            self.conn.backup(other.conn)
        if other.path != ":memory:":  # fold the copied pages out of the WAL now, not on first write
            other.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return other

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- dialect bits ------------------------------------------------------------------------

    def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        """``lastrowid`` (``key`` is the table's INTEGER PRIMARY KEY, the rowid)."""
        return int(self.conn.execute(sql, params).lastrowid or 0)

    def contains(self, column: str) -> str:
        """``instr(column, ?) > 0``."""
        return f"instr({column}, ?) > 0"

    def json_text(self, column: str, key: str) -> tuple[str, str]:
        """``json_extract`` (evaluated in SQLite: no per-row JSON parsing in Python)."""
        return f"json_extract({column}, ?)", f'$."{key}"'

    # -- erasure -----------------------------------------------------------------------------

    @contextmanager
    def secure_delete(self) -> Iterator[None]:
        """``PRAGMA secure_delete = ON`` for the block, then the prior value restored."""
        conn = self.conn
        prior = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
        conn.execute("PRAGMA secure_delete = ON")
        try:
            yield
        finally:
            conn.execute(f"PRAGMA secure_delete = {prior}")

    def purge(self) -> bool:
        """Merge FTS segments so deleted tokens leave the index b-trees, then checkpoint
        the WAL and truncate it; False if another connection kept the checkpoint from
        completing (the old pages then stay in the -wal file until it can)."""
        conn = self.conn
        self._stats = {}  # the BM25 statistics kept per query token (maybe an erased one)
        conn.execute("INSERT INTO item_fts (item_fts) VALUES ('optimize')")
        conn.execute("INSERT INTO desc_fts (desc_fts) VALUES ('optimize')")
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return not busy

    # -- vector storage ----------------------------------------------------------------------

    def put_vectors(self, vrow: int, vectors: Sequence[np.ndarray] | np.ndarray) -> None:
        """One ``desc_vecs`` row per window."""
        self.conn.executemany(
            "INSERT INTO desc_vecs (vrow, chunk, vec) VALUES (?, ?, ?)",
            [(vrow, i, np.asarray(v, dtype=np.float32).tobytes()) for i, v in enumerate(vectors)],
        )

    def delete_vectors(self, vrows: Iterable[int]) -> None:
        """Delete versions' ``desc_vecs`` rows."""
        self.conn.executemany("DELETE FROM desc_vecs WHERE vrow = ?", [(v,) for v in vrows])

    def scope_vectors(self, scope_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Visible versions' window vectors, in seq then window order."""
        rows = self.conn.execute(
            "SELECT v.version_id, d.vec FROM versions v JOIN desc_vecs d ON d.vrow = v.vrow "
            f"WHERE v.scope_id = ? AND {visible(self.conn, scope_id, 'v.seq')} "
            "ORDER BY v.seq, d.chunk",
            (scope_id,),
        ).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 1), dtype=np.float32)
        owners = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return owners, matrix.reshape(len(rows), -1)

    def vectors_after(
        self, scope_id: int, after_seq: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(owner version id, owner seq, vector) rows of visible versions after
        ``after_seq``, in seq then window order."""
        rows = self.conn.execute(
            "SELECT v.version_id, v.seq, d.vec FROM versions v JOIN desc_vecs d ON "
            f"d.vrow = v.vrow WHERE v.scope_id = ? AND v.seq > ? AND "
            f"{visible(self.conn, scope_id, 'v.seq')} ORDER BY v.seq, d.chunk",
            (scope_id, int(after_seq)),
        ).fetchall()
        if not rows:
            z = np.zeros(0, dtype=np.int64)
            return z, z, np.zeros((0, 1), dtype=np.float32)
        owners = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        seqs = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
        return owners, seqs, matrix.reshape(len(rows), -1)

    def vector_owners(self, scope_id: int) -> set[int]:
        """Version rows of the scope with at least one ``desc_vecs`` row."""
        rows = self.conn.execute(
            "SELECT DISTINCT d.vrow FROM desc_vecs d JOIN versions v ON v.vrow = d.vrow "
            "WHERE v.scope_id = ?",
            (scope_id,),
        )
        return {int(r[0]) for r in rows.fetchall()}

    def orphan_vectors(self) -> int:
        """``desc_vecs`` rows whose version row is gone."""
        return int(
            self.conn.execute(
                "SELECT count(*) FROM desc_vecs WHERE vrow NOT IN (SELECT vrow FROM versions)"
            ).fetchone()[0]
        )
