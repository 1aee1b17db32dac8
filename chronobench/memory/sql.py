"""SQLite schema and connection settings of the ChronoMem store.

Tables (all rows carry ``scope_id``; a scope is one (app, user) pair):

- ``scopes``: HEAD (version id and seq), the next version id and seq, and ``gen``,
  a counter bumped by every change so in-process caches can tell they are stale.
  Updating this row inside ``BEGIN IMMEDIATE`` is the per-scope lock.
- ``versions``: one row per version (seq 0 is the empty root), with the commit
  descriptor {delta, summary, op, labels}. Seqs are positions on one timeline
  that is never reused: a truncate rollback does not delete the discarded
  versions, it records their seq range in ``hidden``.
- ``hidden``: per scope, disjoint ranges ``(lo, hi]`` of discarded seqs. Every
  read (snapshots, search, resolve, both indexes, integrity) treats a row whose
  seq falls in a range as absent (:func:`visible`), so a truncate costs O(1) in
  the number of discarded versions; :meth:`ChronoMem.compact` deletes them.
- ``events``: the append-only log of writes (one row per op), with source,
  reason, record time and valid time. Text is referenced by content hash.
- ``blobs``: content-addressed item texts, keyed by (scope, sha256).
- ``spans``: the manifests, as validity intervals ``[from_seq, to_seq)`` of
  (item_id, hash) on the linear history; ``to_seq`` NULL means "still in HEAD".
- ``item_fts`` (rowid = spans.rowid) indexes every span's text; searches keep
  only the spans alive at HEAD. ``desc_fts`` (rowid = versions.rowid) and
  ``desc_vecs`` index every version's descriptor; resolves keep visible ones.
- ``answers`` / ``answer_items``: answer provenance,
  ``audit``: rollbacks and redactions (metadata only, never content).
"""

from __future__ import annotations

import sqlite3

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


def visible(conn: sqlite3.Connection, scope_id: int, col: str) -> str:
    """SQL condition: the seq in column ``col`` is not in a discarded range of the scope.

    Ranges are disjoint, so only the first range ending at or after the seq can hold
    it (one index probe). A scope that never truncated gets the constant ``1``.
    """
    sid = int(scope_id)
    if conn.execute("SELECT 1 FROM hidden WHERE scope_id = ? LIMIT 1", (sid,)).fetchone() is None:
        return "1"
    return (
        f"COALESCE((SELECT h.lo FROM hidden h WHERE h.scope_id = {sid} AND h.hi >= {col} "
        f"ORDER BY h.hi LIMIT 1) >= {col}, 1)"
    )


def alive(conn: sqlite3.Connection, scope_id: int, alias: str = "s") -> str:
    """SQL condition: span ``alias`` holds its item at HEAD (opened on the current
    history, and never closed there; a close in discarded history does not count)."""
    vis_from = visible(conn, scope_id, f"{alias}.from_seq")
    if vis_from == "1":
        return f"{alias}.to_seq IS NULL"
    vis_to = visible(conn, scope_id, f"{alias}.to_seq")
    return f"({vis_from} AND ({alias}.to_seq IS NULL OR NOT {vis_to}))"


def alive_at(conn: sqlite3.Connection, scope_id: int, alias: str = "s") -> str:
    """SQL condition with one ``?`` (the seq, given twice): span alive at that seq."""
    vis_from = visible(conn, scope_id, f"{alias}.from_seq")
    if vis_from == "1":
        return f"{alias}.from_seq <= ? AND ({alias}.to_seq IS NULL OR {alias}.to_seq > ?)"
    vis_to = visible(conn, scope_id, f"{alias}.to_seq")
    return (
        f"{vis_from} AND {alias}.from_seq <= ? AND ({alias}.to_seq IS NULL "
        f"OR {alias}.to_seq > ? OR NOT {vis_to})"
    )
