"""The SQLite backend of ChronoMem: schema, connection settings, FTS5 and vector tables.

Implements :class:`chronobench.memory.backend.Backend`. The lexical indexes are FTS5
tables (``item_fts``, ``desc_fts``; porter tokenizer) whose ``tag`` column holds
:func:`scope_tag`, so one MATCH stays inside one scope; scores are ``-bm25`` with
the tag column weighted 0. Descriptor vectors are float32 blobs in ``desc_vecs``.
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

from chronobench.memory.query import or_expression
from chronobench.memory.sql import alive, visible

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


def scope_tag(scope_id: int) -> str:
    """FTS token that confines a MATCH to one scope."""
    return f"s{scope_id}"


def _match(scope_id: int, terms: Sequence[str]) -> str | None:
    expr = or_expression(list(terms))
    return None if expr is None else f'tag : "{scope_tag(scope_id)}" AND body : ({expr})'


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (as FTS5 writes its records) read from ``blob``."""
    out, i = [], 0
    while i < len(blob):
        v = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                v = (v << 8) | byte
                break
            v = (v << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(v)
    return out


def _averages(blob: bytes) -> tuple[int, int]:
    """(rows, tokens over every column) from FTS5's averages record."""
    vals = _varints(blob)
    return (vals[0], sum(vals[1:])) if vals else (0, 0)


class SQLiteBackend:
    """One SQLite database file (or ``":memory:"``) holding ChronoMem stores."""

    def __init__(self, path: str, *, busy_timeout_ms: int = 60_000) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.lock = threading.RLock()
        self._conn: sqlite3.Connection | None = connect(path, busy_timeout_ms=busy_timeout_ms)
        self._vocab = False  # temp.desc_vocab created on this connection
        self._stats: tuple[Any, tuple[int, int], dict[str, int]] = (None, (0, 0), {})

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
        """One read transaction (one WAL snapshot); the caller holds no transaction."""
        with self.lock:
            conn = self.conn
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
        conn.execute("INSERT INTO item_fts (item_fts) VALUES ('optimize')")
        conn.execute("INSERT INTO desc_fts (desc_fts) VALUES ('optimize')")
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return not busy

    # -- lexical search ----------------------------------------------------------------------

    def index_item(self, scope_id: int, span_id: int, text: str) -> None:
        """Add a span's text to ``item_fts``."""
        self.conn.execute(
            "INSERT INTO item_fts (rowid, tag, body) VALUES (?, ?, ?)",
            (span_id, scope_tag(scope_id), text),
        )

    def unindex_items(self, span_ids: Iterable[int]) -> None:
        """Delete spans from ``item_fts``."""
        self.conn.executemany("DELETE FROM item_fts WHERE rowid = ?", [(s,) for s in span_ids])

    def match_items(self, scope_id: int, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Live spans by ``-bm25`` (the index also holds closed and discarded spans)."""
        match = _match(scope_id, terms)
        if match is None:
            return []
        # "+rowid": a plain rowid IN (...) is pushed into FTS5, which then runs the MATCH
        # once per listed rowid (seconds at 10k items).
        return self.conn.execute(
            "SELECT rowid, -bm25(item_fts, 0.0, 1.0) FROM item_fts WHERE item_fts "
            "MATCH ? AND +rowid IN (SELECT s.span_id FROM spans s WHERE s.scope_id = ? "
            f"AND {alive(self.conn, scope_id)}) ORDER BY bm25(item_fts, 0.0, 1.0) LIMIT ?",
            (match, scope_id, k),
        ).fetchall()

    def index_descriptor(self, scope_id: int, vrow: int, body: str) -> None:
        """Add a version's lexical descriptor to ``desc_fts``."""
        self.conn.execute(
            "INSERT INTO desc_fts (rowid, tag, body) VALUES (?, ?, ?)",
            (vrow, scope_tag(scope_id), body),
        )

    def unindex_descriptors(self, vrows: Iterable[int]) -> None:
        """Delete versions from ``desc_fts``."""
        self.conn.executemany("DELETE FROM desc_fts WHERE rowid = ?", [(v,) for v in vrows])

    def match_descriptors(
        self, scope_id: int, terms: Sequence[str], k: int
    ) -> list[tuple[int, float]]:
        """Visible versions by ``-bm25``, ties in seq order."""
        match = _match(scope_id, terms)
        if match is None or k <= 0:
            return []
        rows = self.conn.execute(
            "SELECT v.version_id, bm25(desc_fts, 0.0, 1.0) AS s FROM desc_fts "
            "JOIN versions v ON v.vrow = desc_fts.rowid WHERE desc_fts MATCH ? "
            f"AND {visible(self.conn, scope_id, 'v.seq')} ORDER BY s ASC, v.seq ASC LIMIT ?",
            (match, int(k)),
        ).fetchall()
        return [(int(v), -float(s)) for v, s in rows]

    def descriptor_scores(
        self, scope_id: int, terms: Sequence[str], version_ids: Iterable[int]
    ) -> dict[int, float | None]:
        """``-bm25`` of each version, one rowid lookup each."""
        match = _match(scope_id, terms)
        out: dict[int, float | None] = {}
        for vid in version_ids:
            row = None
            if match is not None:
                row = self.conn.execute(
                    "SELECT bm25(desc_fts, 0.0, 1.0) FROM desc_fts WHERE desc_fts MATCH ? AND "
                    "rowid = (SELECT vrow FROM versions WHERE scope_id = ? AND version_id = ?)",
                    (match, scope_id, vid),
                ).fetchone()
            out[vid] = None if row is None else -float(row[0])
        return out

    def descriptor_docs(
        self, scope_id: int, after_seq: int = -1
    ) -> tuple[list[int], list[int], list[str]]:
        """Visible versions after ``after_seq``: ids, seqs and ``desc_fts`` bodies, in
        seq order."""
        rows = self.conn.execute(
            "SELECT v.version_id, v.seq, f.body FROM versions v JOIN desc_fts f ON "
            f"f.rowid = v.vrow WHERE v.scope_id = ? AND v.seq > ? AND "
            f"{visible(self.conn, scope_id, 'v.seq')} ORDER BY v.seq",
            (scope_id, int(after_seq)),
        ).fetchall()
        return [int(r[0]) for r in rows], [int(r[1]) for r in rows], [r[2] for r in rows]

    def descriptor_lengths(
        self, scope_id: int, after_seq: int = -1
    ) -> tuple[list[int], list[int], list[int], list[float]]:
        """Visible versions after ``after_seq``: ids, seqs, ``desc_fts`` rowids and token
        counts over every column (FTS5's ``docsize`` record), in seq order."""
        rows = self.conn.execute(
            "SELECT v.version_id, v.seq, v.vrow, d.sz FROM versions v JOIN desc_fts_docsize d "
            f"ON d.id = v.vrow WHERE v.scope_id = ? AND v.seq > ? AND "
            f"{visible(self.conn, scope_id, 'v.seq')} ORDER BY v.seq",
            (scope_id, int(after_seq)),
        ).fetchall()
        return (
            [int(r[0]) for r in rows],
            [int(r[1]) for r in rows],
            [int(r[2]) for r in rows],
            [float(sum(_varints(r[3]))) for r in rows],
        )

    def descriptor_postings(self, scope_id: int, token: str) -> tuple[list[int], list[int]]:
        """``desc_fts`` rowids whose body holds ``token``, and how often (every scope's:
        the caller keeps its own)."""
        self._ensure_vocab()
        rows = self.conn.execute(
            "SELECT doc FROM temp.desc_inst WHERE term = ? AND col = 'body'", (token,)
        ).fetchall()
        docs, counts = np.unique(
            np.fromiter((r[0] for r in rows), np.int64, len(rows)), return_counts=True
        )
        return docs.tolist(), counts.tolist()

    def _ensure_vocab(self) -> None:
        if not self._vocab:
            self.conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.desc_vocab USING fts5vocab "
                "(main, desc_fts, col)"
            )
            self.conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.desc_inst USING fts5vocab "
                "(main, desc_fts, instance)"
            )
            self._vocab = True

    def descriptor_stats(self, scope_id: int, tokens: Sequence[str]) -> tuple[int, int, list[int]]:
        """What FTS5's ``bm25()`` reads: the table's rows and tokens (every column, every
        scope) from its averages record, and the rows whose body holds each token (from
        an ``fts5vocab`` table in the connection's temp schema)."""
        conn = self.conn
        self._ensure_vocab()
        # Counts are kept until the file changes: another connection's commit moves
        # data_version, this connection's writes move total_changes.
        state = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        if self._stats[0] != state:
            row = conn.execute("SELECT block FROM desc_fts_data WHERE id = 1").fetchone()
            self._stats = (state, _averages(row[0] if row else b""), {})
        _, (n_docs, n_tokens), known = self._stats
        wanted = sorted(set(tokens) - set(known))
        if wanted:
            found = dict(
                conn.execute(
                    f"SELECT term, doc FROM temp.desc_vocab WHERE col = 'body' AND term IN "
                    f"({','.join('?' * len(wanted))})",
                    tuple(wanted),
                ).fetchall()
            )
            known.update({t: int(found.get(t, 0)) for t in wanted})
        return n_docs, n_tokens, [known[t] for t in tokens]

    def descriptor_body(self, vrow: int) -> str | None:
        """The ``desc_fts`` body of a version row."""
        got = self.conn.execute("SELECT body FROM desc_fts WHERE rowid = ?", (vrow,)).fetchone()
        return got[0] if got else None

    def descriptors_containing(self, scope_id: int, needle: str) -> list[tuple[int, str]]:
        """``desc_fts`` rows of the scope whose body contains ``needle``."""
        return self.conn.execute(
            "SELECT rowid, body FROM desc_fts WHERE desc_fts MATCH ? AND instr(body, ?) > 0",
            (f'tag : "{scope_tag(scope_id)}"', needle),
        ).fetchall()

    def indexed_items(self, scope_id: int) -> set[int]:
        """Rowids of the scope's ``item_fts`` rows."""
        return self._tagged("item_fts", scope_id)

    def indexed_descriptors(self, scope_id: int) -> set[int]:
        """Rowids of the scope's ``desc_fts`` rows."""
        return self._tagged("desc_fts", scope_id)

    def _tagged(self, table: str, scope_id: int) -> set[int]:
        rows = self.conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (f'tag : "{scope_tag(scope_id)}"',)
        )
        return {int(r[0]) for r in rows.fetchall()}

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
