"""The PostgreSQL backend of ChronoMem (``ChronoMem("postgresql://user@host:port/db")``).

Implements :class:`chronomem.backend.Backend` on one psycopg 3 connection per
store (autocommit; writes in explicit transactions). Schema: :mod:`.schema`; lexical
index and scoring: :mod:`.lexical` (FTS5's BM25 from stored term statistics), the
search methods: :mod:`.lexicon`;
descriptor vectors are ``float4[]`` rows scored in the client, like SQLite's blobs.

Concurrency (many processes, many hosts):

- a write transaction is READ COMMITTED and locks its scope's ``scopes`` row
  (:meth:`PostgresBackend.lock_scope`, ``SELECT ... FOR UPDATE``) before it reads
  HEAD, so writers of one (app, user) scope run one after the other and writers of
  other scopes never wait for them; a lock wait gives up after ``busy_timeout_ms``
  (``lock_timeout``), as SQLite's busy timeout does;
- every change commits atomically: a reader sees a whole commit or rollback or none;
  :meth:`PostgresBackend.read_snapshot` is one REPEATABLE READ snapshot;
- a lost connection raises :class:`~.conn.StoreConnectionError` and the next call
  reconnects; a commit that returned is durable (``synchronous_commit`` as the server
  has it; the default, ``on``, survives a server crash).
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from chronomem.pg import commitfn, copying, fastwrite
from chronomem.pg import schema as ddl
from chronomem.pg.conn import (
    PgConn,
    connect_raw,
    describe_url,
    quote_ident,
)
from chronomem.pg.lexicon import PgLexicon
from chronomem.pg.locations import DEFAULT_SCHEMA, is_url
from chronomem.sql import visible

CLONE_PREFIX = "chronomem_clone_"


class PostgresBackend(PgLexicon):
    """One schema of one PostgreSQL database holding ChronoMem stores.

    The lexical-search methods come from :class:`~chronomem.pg.lexicon.PgLexicon`.
    """

    def __init__(
        self,
        url: str,
        *,
        busy_timeout_ms: int = 60_000,
        schema: str | None = None,
        ephemeral: bool = False,
    ) -> None:
        self.path = url
        self.url = url
        self.where = describe_url(url)
        self.busy_timeout_ms = int(busy_timeout_ms)
        self.lock = threading.RLock()
        self.schema = schema
        self.ephemeral = ephemeral  # a clone's schema, dropped on close
        self._pid = os.getpid()
        self._closed = False
        # Tables an erasing block's transactions changed (see secure_delete): a purge
        # rewrites those when every one of them noted its own, else every table.
        self._erased: set[str] = set()
        self._erasing = False
        self._noted = False  # an erasing transaction of the block noted its tables
        self._blind = False  # one could not (the server counts nothing)
        self._unpurged: set[str] = set()  # tables a purge could not lock; the next retries
        self._spare_lock = threading.Lock()
        self._spares: list[PgConn] | None = None  # helpers opened during an erasing block
        self._conn: PgConn | None = None
        self._conn = self._connect()
        self._bootstrap()

    # -- connection and transactions ---------------------------------------------------------

    def _connect(self) -> PgConn:
        raw = connect_raw(self.url, self.schema, self.busy_timeout_ms, "chronomem")
        if self.schema is None:
            self.schema = self._schema_from_url(raw)
            raw.execute("SELECT set_config('search_path', %s, false)", (quote_ident(self.schema),))
        return PgConn(raw, self.where)

    def _schema_from_url(self, raw: Any) -> str:
        """The URL's own search_path, when it sets one, else ``chronomem``."""
        if "search_path" not in self.url:
            return DEFAULT_SCHEMA
        first = raw.execute("SHOW search_path").fetchone()[0].split(",")[0].strip()
        if first == '"$user"':
            first = raw.info.user
        return first.strip('"') or DEFAULT_SCHEMA

    def _bootstrap(self) -> None:
        """Create the schema and tables (once, serialised between processes)."""
        conn = self.conn
        with self.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(?))", ("chronomem:" + self.schema,))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(self.schema)}")
            exists = conn.execute(
                "SELECT 1 FROM pg_tables WHERE schemaname = ? AND tablename = 'meta'",
                (self.schema,),
            ).fetchone()
            if not exists:
                copying.create_tables(conn)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is not None and row[0] in ddl.UPGRADES:
                for stmt in ddl.migrate_sql(row[0]):
                    conn.execute(stmt)
                commitfn.install(conn)
                row = (ddl.SCHEMA_VERSION,)
        if row is None or row[0] != ddl.SCHEMA_VERSION:
            self.close()
            raise RuntimeError(
                f"{self.where} schema {self.schema}: ChronoMem store schema "
                f"{row[0] if row else 'unknown'} is not the supported {ddl.SCHEMA_VERSION}; "
                "use another schema (?options=-csearch_path%3Dname) or re-ingest"
            )

    @property
    def conn(self) -> PgConn:
        """The open connection; reconnects after a lost one (raises once closed)."""
        if self._closed or self._conn is None:
            raise RuntimeError("this ChronoMem store is closed")
        if self._pid != os.getpid():  # a forked child never shares its parent's socket
            self._pid, self._conn = os.getpid(), None
            self._conn = self._connect()
        elif self._conn.broken() and not (self._conn.in_txn or self._conn.in_read):
            # never mid-transaction: a read's snapshot must not silently become two
            self._conn = self._connect()
        return self._conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[PgConn]:
        """``BEGIN`` (READ COMMITTED) ... ``COMMIT``; rolled back on any exception.
        Writers lock their scope with :meth:`lock_scope` inside it."""
        with self.lock:
            conn = self.conn
            conn.begin_with_next("BEGIN")  # sent with the first statement
            conn.in_txn = True
            try:
                yield conn
                if self._erasing:  # a failure here rolls the erasure back, as any other
                    self._note_changed_tables(conn)
            except BaseException:
                conn.in_txn = False
                if not conn.broken():
                    with contextlib.suppress(Exception):
                        conn.end("ROLLBACK")
                raise
            try:
                conn.end("COMMIT")
            finally:
                conn.in_txn = False

    def _note_changed_tables(self, conn: PgConn) -> None:
        """Inside an erasing transaction, before its COMMIT: remember which of the
        schema's tables it updated or deleted rows of (the server's exact per-transaction
        counts), so :meth:`purge` rewrites those alone (of :data:`~.schema.COUNTS_ONLY`,
        those it deleted rows of). With ``track_counts`` off the server counts nothing:
        the purge then rewrites every table."""
        self._noted = True
        if conn.pending_begin():
            return  # nothing was sent: nothing changed
        counting, names = conn.execute(
            "SELECT current_setting('track_counts')::boolean, ARRAY(SELECT s.relname::text "
            "FROM pg_stat_xact_user_tables s JOIN pg_class c ON c.oid = "
            "coalesce(pg_partition_root(s.relid), s.relid) WHERE s.schemaname = ? AND "
            "(s.n_tup_del > 0 OR (s.n_tup_upd > 0 AND c.relname <> ALL(?))))",
            (self.schema, list(ddl.COUNTS_ONLY)),
        ).fetchone()
        if not counting:
            self._blind = True
        self._erased.update(names)

    def lock_scope(self, scope_id: int) -> None:
        """Inside :meth:`transaction`: wait for, then hold, the scope's write lock."""
        self.conn.execute("SELECT 1 FROM scopes WHERE scope_id = ? FOR UPDATE", (int(scope_id),))

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[PgConn]:
        """One REPEATABLE READ, read-only transaction: every read sees one state. Inside
        a transaction already (a nested read, or a write) the block joins it."""
        with self.lock:
            conn = self.conn
            if conn.in_txn or conn.in_read:
                yield conn
                return
            # sent with the first read: one round trip fewer per read
            conn.begin_with_next("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            conn.in_read = True
            try:
                yield conn
            finally:
                conn.in_read = False
                if not conn.broken():
                    conn.end("COMMIT")

    def copy(self, path: str) -> PostgresBackend:
        """An independent copy: ``":memory:"`` makes a temporary schema in the same
        database (dropped when the copy closes); a PostgreSQL URL copies into that
        database (whose ChronoMem schema must be empty)."""
        if path in (":memory:", "", None):
            name = CLONE_PREFIX + uuid.uuid4().hex[:12]
            with self.lock:
                conn = self.conn
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                conn.in_txn = True
                try:
                    copying.into_schema(conn, self.schema, name)
                except BaseException:
                    conn.in_txn = False
                    with contextlib.suppress(Exception):
                        conn.raw.execute("ROLLBACK")
                    raise
                conn.in_txn = False
                conn.execute("COMMIT")
            return PostgresBackend(
                self.url, busy_timeout_ms=self.busy_timeout_ms, schema=name, ephemeral=True
            )
        if not is_url(path):
            raise ValueError(
                f"clone target {path!r}: a PostgreSQL store clones into PostgreSQL; pass a "
                "postgresql:// URL, or ':memory:' for a temporary copy on the same server"
            )
        other = PostgresBackend(path, busy_timeout_ms=self.busy_timeout_ms)
        try:
            if other.conn.execute("SELECT 1 FROM scopes LIMIT 1").fetchone():
                raise FileExistsError(
                    f"clone target {other.where} schema {other.schema} already holds a store"
                )
            with self.read_snapshot() as src, other.transaction() as dst:
                copying.to_database(src, self.schema, dst, other.schema)
        except BaseException:
            other.close()
            raise
        return other

    def close(self) -> None:
        """Close the connection (idempotent); a temporary clone's schema is dropped."""
        with self.lock:
            if self._closed:
                return
            self._closed = True
            conn, self._conn = self._conn, None
            if conn is None:
                return
            if self.ephemeral and not conn.broken():
                with contextlib.suppress(Exception):
                    conn.raw.execute(f"DROP SCHEMA IF EXISTS {quote_ident(self.schema)} CASCADE")
            conn.close()

    def commit_fast(
        self,
        app: str,
        user: str,
        prepared: Sequence[Any],
        dense_pre: Sequence[str],
        vectors: Sequence[np.ndarray],
        encoder: Any,
        describe: Any,
        *,
        consulted: Sequence[Any] | None = None,
    ) -> list[int] | None:
        """Commit prepared writes in one round trip (the server function of
        :mod:`.commitfn`), else in two round trips each (:mod:`.fastwrite`); None: they
        need the generic path. ``consulted``: per write, the texts its descriptor
        quotes, as read before the lock (without them only the pipelined path applies)."""
        if consulted is not None:
            got = commitfn.commit_writes(
                self, app, user, prepared, dense_pre, vectors, consulted, describe
            )
            if got is not None:
                return got
        if not fastwrite.supported():
            return None
        return fastwrite.commit_writes(
            self, app, user, prepared, dense_pre, vectors, encoder, describe
        )

    def revert_items(self, scope_id: int, *args: Any) -> None:
        """A revert's item writes and events, set-based (see :mod:`.fastwrite`)."""
        fastwrite.revert_items(self, scope_id, *args)

    def copy_items(self, scope_id: int, items: Sequence[tuple[str, str, str]]) -> None:
        """A new branch's items, set-based (see :mod:`.branchcopy`)."""
        from chronomem.pg import branchcopy

        branchcopy.copy_items(self.conn, scope_id, items)

    # -- dialect bits ------------------------------------------------------------------------

    def shared_vectors(self) -> Any:
        """The server's embedding table, for the embedding cache of this store's embedder."""
        from chronomem.pg.vectors import PgVectors

        return PgVectors(self.url, self.schema)

    def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        """Run one ``INSERT`` and return the new row's ``key`` (``RETURNING``)."""
        return int(self.conn.execute(f"{sql} RETURNING {key}", params).fetchone()[0])

    def contains(self, column: str) -> str:
        """``strpos(column, ?) > 0``."""
        return f"strpos({column}, ?) > 0"

    def json_text(self, column: str, key: str) -> tuple[str, str]:
        """The JSON text of the value under ``key`` (NULL when absent or JSON null)."""
        return f"NULLIF((({column})::json -> ?)::text, 'null')", key

    # -- erasure -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def secure_delete(self) -> Iterator[None]:
        """Nothing to switch on (PostgreSQL never overwrites freed tuples in place;
        :meth:`purge` rewrites tables instead), but the block's transactions note the
        tables they change, so the purge after it rewrites only those."""
        with self.lock:
            outer = self._erasing
            spares = None
            if not outer:
                self._erasing = True
                self._erased, self._noted, self._blind = set(), False, False
                spares = self._open_spares()
            try:
                yield
            finally:
                if not outer:
                    self._erasing = False
                    self._erased, self._noted, self._blind = set(), False, False
                    self._close_spares(spares)

    def _open_spares(self) -> tuple[threading.Thread, list[PgConn]]:
        """Start opening the purge's other lanes' connections in the background, so
        they are ready when the erasing transaction commits: at 10,000 writes a
        redaction's transaction takes ~50 ms and each new connection (a server process)
        several, which delayed the lanes' first rewrite by 10-30 ms."""
        from chronomem.pg.rewrite import LANES

        spares: list[PgConn] = []

        def opener() -> None:
            for _ in range(LANES - 1):
                try:
                    conn = self._connect_helper()
                except Exception:  # noqa: BLE001 - e.g. max_connections: the purge opens its own
                    return
                with self._spare_lock:
                    if self._spares is not spares:  # the block ended meanwhile
                        conn.close()
                        return
                    spares.append(conn)

        with self._spare_lock:
            self._spares = spares
        thread = threading.Thread(target=opener, name="chronomem-purge-open", daemon=True)
        thread.start()
        return thread, spares

    def _close_spares(self, started: tuple[threading.Thread, list[PgConn]] | None) -> None:
        """End of the erasing block: close the connections the purge did not take."""
        if started is None:
            return
        thread, spares = started
        with self._spare_lock:
            self._spares = None
            left, spares[:] = list(spares), []
        thread.join()
        for conn in left:
            with contextlib.suppress(Exception):
                conn.close()

    def purge(self) -> bool:
        """``VACUUM FULL`` the ChronoMem tables that the last erasing block changed (all
        of the schema's tables when no block says which): each table, its TOAST table
        and its indexes are rewritten into new files without the deleted rows, and the
        old files are unlinked. Returns False when a lock wait timed out (another
        session held a table); a later purge completes it.

        Why only the changed tables: the rewrite is linear in a table's size, not in
        what was erased, and a table the erasing transaction neither updated nor deleted
        rows of holds no row it removed (nor does one of :data:`~.schema.NO_CONTENT`,
        whichever changed). (Planner statistics are left to autovacuum's
        ANALYZE: the content columns keep none, see :mod:`.schema`.)"""
        from chronomem.pg.rewrite import rewrite

        with self.lock:
            conn = self.conn
            # the embedding cache's too; never meta (the schema's version)
            every = [t for t in copying.files(conn, self.schema) if t != "meta"]
            todo = every
            if self._erasing and self._noted and not self._blind:
                # what a lock wait left last time too, less what holds no content
                erased = (self._erased | self._unpurged) - set(ddl.NO_CONTENT)
                todo = [t for t in every if t in erased]
            self._erased, self._noted, self._blind = set(), False, False
            self._unpurged = rewrite(conn, self.schema, todo, self._helper)
            return not self._unpurged

    def _helper(self) -> PgConn:
        """A second connection to the store's schema (a purge's other lane): one opened
        while the erasing block ran when there is one, else a new one."""
        with self._spare_lock:
            if self._spares:
                return self._spares.pop()
        return self._connect_helper()

    def _connect_helper(self) -> PgConn:
        raw = connect_raw(self.url, self.schema, self.busy_timeout_ms, "chronomem-purge")
        return PgConn(raw, self.where)

    def retire_wal(self) -> dict[str, Any]:
        """After a redaction: end the WAL segment holding the erased rows and checkpoint,
        so the server retires the old segments (an operator's privileges needed; see
        :mod:`.wal`, which says what stays in archives and replicas)."""
        from chronomem.pg.wal import retire_wal

        with self.lock, self.conn.driver_errors():
            return retire_wal(self.conn.raw)

    # -- vector storage ----------------------------------------------------------------------

    def put_vectors(self, vrow: int, vectors: Sequence[np.ndarray] | np.ndarray) -> None:
        """One ``desc_vecs`` row (``float4[]``) per window."""
        self.conn.executemany(
            "INSERT INTO desc_vecs (vrow, chunk, vec) VALUES (?, ?, ?::float4[])",
            [
                (vrow, i, np.asarray(v, dtype=np.float32).astype(np.float64).tolist())
                for i, v in enumerate(vectors)
            ],
        )

    def delete_vectors(self, vrows: Iterable[int]) -> None:
        """Delete versions' vectors."""
        ids = [int(v) for v in vrows]
        if ids:
            # a join, not "= ANY": the planner prunes the partitions for every element
            # of a constant array, which at thousands of ids (compaction) took longer
            # than the delete
            self.conn.execute(
                "DELETE FROM desc_vecs WHERE vrow IN (SELECT unnest(?::bigint[]))", (ids,)
            )

    def scope_vectors(self, scope_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Visible versions' window vectors, in seq then window order."""
        sql = (
            "SELECT v.version_id, d.vec FROM versions v JOIN desc_vecs d ON d.vrow = v.vrow "
            f"WHERE v.scope_id = %s AND {visible(self.conn, scope_id, 'v.seq')} "
            "ORDER BY v.seq, d.chunk"
        )
        with self.conn.driver_errors(), self.conn.raw.cursor(binary=True) as cur:
            rows = cur.execute(sql, (scope_id,)).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 1), dtype=np.float32)
        owners = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        return owners, np.stack([r[1] for r in rows]).astype(np.float32, copy=False)

    def vectors_after(
        self, scope_id: int, after_seq: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(owner version id, owner seq, vector) rows of visible versions after
        ``after_seq``, in seq then window order."""
        sql = (
            "SELECT v.version_id, v.seq, d.vec FROM versions v JOIN desc_vecs d ON "
            f"d.vrow = v.vrow WHERE v.scope_id = %s AND v.seq > %s AND "
            f"{visible(self.conn, scope_id, 'v.seq')} ORDER BY v.seq, d.chunk"
        )
        with self.conn.driver_errors(), self.conn.raw.cursor(binary=True) as cur:
            rows = cur.execute(sql, (scope_id, int(after_seq))).fetchall()
        if not rows:
            z = np.zeros(0, dtype=np.int64)
            return z, z, np.zeros((0, 1), dtype=np.float32)
        owners = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        seqs = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        return owners, seqs, np.stack([r[2] for r in rows]).astype(np.float32, copy=False)

    def vector_owners(self, scope_id: int) -> set[int]:
        """Version rows of the scope that have vectors."""
        rows = self.conn.execute(
            "SELECT DISTINCT d.vrow FROM desc_vecs d JOIN versions v ON v.vrow = d.vrow "
            "WHERE v.scope_id = ?",
            (scope_id,),
        )
        return {int(r[0]) for r in rows.fetchall()}

    def orphan_vectors(self) -> int:
        """How many stored vectors belong to no version."""
        return int(
            self.conn.execute(
                "SELECT count(*) FROM desc_vecs d WHERE NOT EXISTS "
                "(SELECT 1 FROM versions v WHERE v.vrow = d.vrow)"
            ).fetchone()[0]
        )
