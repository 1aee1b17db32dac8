"""The embedding cache's persistent half on PostgreSQL: every process, on every host, that
opens a store on the server shares one table of text vectors (``embeddings``).

Same contract as :class:`chronomem.vector_cache.PersistentVectors` (rows keyed
by model id and sha256 of the text, the text never stored; concurrent writers agree
through ``ON CONFLICT DO NOTHING``), on a connection of its own in autocommit mode, so
a cache write never joins or waits for a store transaction.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

_SLICE = 1000


class PgVectors:
    """``get``/``put``/``delete``/``count``/``close`` over the ``embeddings`` table."""

    def __init__(self, url: str, schema: str) -> None:
        self.url = url
        self.schema = schema
        self.path = f"{url}#{schema}"  # what EmbeddingCache.attach compares
        self._lock = threading.Lock()
        self._conn: Any = None
        self._pid = -1

    def _connect(self) -> Any:
        if self._conn is not None and self._pid == os.getpid() and not self._conn.broken:
            return self._conn
        from chronomem.pg.conn import connect_raw

        conn = connect_raw(self.url, self.schema, 60_000, "chronomem-vectors")
        # A cache row lost in a server crash is only recomputed, so its insert need not
        # wait for the WAL flush (a second flush per store commit); the store's own
        # connection keeps the server's synchronous_commit, and delete() waits.
        conn.execute("SET synchronous_commit = off")
        self._conn, self._pid = conn, os.getpid()
        return conn

    @contextlib.contextmanager
    def _using(self) -> Iterator[Any]:
        """The connection, under the lock; a lost one is a clear error (reconnects next)."""
        import psycopg

        from chronomem.pg.conn import describe_url, driver_message
        from chronomem.types import StoreConnectionError

        with self._lock:
            try:
                yield self._connect()
            except psycopg.OperationalError as exc:
                if self._conn is not None and not (self._conn.broken or self._conn.closed):
                    raise  # the connection is fine: not a connection problem
                self._conn = None
                raise StoreConnectionError(
                    f"lost the connection to PostgreSQL at {describe_url(self.url)} (embedding "
                    f"cache: {driver_message(exc, self.url)[:200]}). Nothing was written. The store "
                    "reconnects on its next call."
                ) from exc

    def get(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``keys`` for ``model`` (missing keys are absent)."""
        unique = list(dict.fromkeys(keys))
        found: dict[str, np.ndarray] = {}
        with self._using() as conn:
            for start in range(0, len(unique), _SLICE):
                with conn.cursor(binary=True) as cur:
                    rows = cur.execute(
                        "SELECT key, dim, vec FROM embeddings WHERE model = %s AND key = ANY(%s)",
                        (model, unique[start : start + _SLICE]),
                    ).fetchall()
                for key, dim, vec in rows:
                    if vec.shape[0] == dim:
                        found[key] = vec
        return found

    def put(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store ``(key, vector)`` pairs for ``model`` (first writer wins)."""
        rows = [
            (model, key, int(v.shape[0]), np.asarray(v, np.float32).astype(np.float64).tolist())
            for key, v in items
        ]
        if not rows:
            return
        with self._using() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO embeddings (model, key, dim, vec) VALUES (%s, %s, %s, %s::float4[]) "
                "ON CONFLICT DO NOTHING",
                rows,
            )

    def delete(self, keys: Sequence[str], model: str | None = None) -> int:
        """Delete the vectors of ``keys`` (every model unless ``model``) and rewrite the
        table (VACUUM FULL) so their bytes leave its files; returns rows deleted."""
        unique = list(dict.fromkeys(keys))
        deleted = 0
        with self._using() as conn:
            conn.execute("SET synchronous_commit = on")  # an erasure must survive a crash
            for start in range(0, len(unique), _SLICE):
                part = unique[start : start + _SLICE]
                if model is None:
                    cur = conn.execute("DELETE FROM embeddings WHERE key = ANY(%s)", (part,))
                else:
                    cur = conn.execute(
                        "DELETE FROM embeddings WHERE key = ANY(%s) AND model = %s", (part, model)
                    )
                deleted += cur.rowcount
            if deleted:  # forgotten vectors (and their keys) leave the table's files now
                conn.execute("VACUUM (FULL) embeddings")
            conn.execute("SET synchronous_commit = off")
        return deleted

    def count(self, model: str | None = None) -> int:
        """Number of stored vectors (for one model, or all)."""
        with self._using() as conn:
            if model is None:
                return int(conn.execute("SELECT count(*) FROM embeddings").fetchone()[0])
            row = conn.execute("SELECT count(*) FROM embeddings WHERE model = %s", (model,))
            return int(row.fetchone()[0])

    def close(self) -> None:
        """Close this process's connection (reopened on next use)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn, self._pid = None, -1
