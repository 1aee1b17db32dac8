"""A persistent, content-addressed store of embedding vectors (SQLite, WAL).

Rows are keyed by ``(model id, sha256 of the text)`` and hold the float32 vector
only: the text itself is never written. Several processes (a joblib multirun, two
terminals) may read and write the same file at once: WAL lets readers run beside
a writer, ``busy_timeout`` makes a writer wait for the lock instead of failing, and
``INSERT OR IGNORE`` makes two processes that embed the same text agree (a text's
vector is a pure function of model and text, so whichever row lands first is right).

Processes that miss vectors at the same time split the work instead of queueing for it:
each *claims* the missing texts no live process is computing (:meth:`PersistentVectors.claim`,
a row per text in the ``claims`` table, taken under a lock file held for milliseconds),
computes those with no lock held, and waits for the rest to land. So two cells that
index different texts embed on two cores at once, and no text is embedded twice.

Deleting (:meth:`PersistentVectors.delete`, used when memory is redacted) runs with
``secure_delete`` on and then truncates the WAL, so a forgotten vector's bytes do
not stay behind in free pages or old WAL frames.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from chronomem.sqlite_retry import retry_busy

__all__ = ["PersistentVectors", "text_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    key TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (model, key)
) WITHOUT ROWID
"""
_CLAIMS = """
CREATE TABLE IF NOT EXISTS claims (
    model TEXT NOT NULL,
    key TEXT NOT NULL,
    owner TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (model, key)
) WITHOUT ROWID
"""
#: A claim by another machine (a shared folder) is trusted this long; one by a process of
#: this machine as long as the process lives.
CLAIM_TTL_S = 1800.0
_SLICE = 500  # bound parameters per IN (...) query, well under SQLite's limit


def text_key(text: str) -> str:
    """The content address of ``text``: hex sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class PersistentVectors:
    """The on-disk half of the embedding cache; one file may hold many models.

    Thread-safe; safe to share a file between processes. Connections are opened per
    process (a forked child never reuses its parent's connection).
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 60_000) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = int(busy_timeout_ms)
        self._lock = threading.Lock()
        self._compute = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OSError(
                f"embedding cache: cannot create the folder {self.path.parent} ({exc}); "
                "set paths.cache_dir (or $CHRONOBENCH_CACHE) to a writable folder"
            ) from exc

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        conn = sqlite3.connect(
            str(self.path),
            timeout=self.busy_timeout_ms / 1000,
            check_same_thread=False,
            isolation_level=None,  # explicit BEGIN/COMMIT below
        )
        conn.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
        retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"))
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA secure_delete=ON")  # deleted vectors are zeroed on disk
        retry_busy(lambda: conn.execute(_SCHEMA))
        retry_busy(lambda: conn.execute(_CLAIMS))
        self._conn, self._pid = conn, os.getpid()
        return conn

    @contextmanager
    def _file_lock(self) -> Iterator[None]:
        """The lock file beside the cache (no data in it), across processes."""
        try:
            import fcntl
        except ImportError:  # not POSIX: processes may compute a text twice, harmlessly
            yield
            return
        with open(self.path.with_name(self.path.name + ".lock"), "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def claim(
        self, model: str, keys: Sequence[str]
    ) -> tuple[dict[str, np.ndarray], list[str], list[str]]:
        """``(stored vectors, mine, theirs)`` of ``keys``: what is on disk already, the
        missing keys now claimed by this thread (compute them, then :meth:`put` and
        :meth:`release` them), and those a live process or thread is computing (wait for
        them, then claim again: a dead claimant's keys pass to the next claimer)."""
        import socket
        import time

        me = f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"
        with self._compute, self._file_lock():
            found = self.get(model, keys)
            todo = [k for k in dict.fromkeys(keys) if k not in found]
            mine: list[str] = []
            theirs: list[str] = []
            with self._lock:
                conn = self._connect()
                rows = _per_model_keys(conn, "SELECT key, owner, at FROM claims", model, todo)
                held: dict[str, tuple[str, float]] = {k: (o, at) for k, o, at in rows}
                now = time.time()
                for k in todo:
                    owner = held.get(k)
                    if owner is not None and owner[0] != me and _alive(owner[0], owner[1], now):
                        theirs.append(k)
                    else:
                        mine.append(k)
                if mine:
                    rows_in = [(model, k, me, now) for k in mine]

                    def write() -> None:
                        conn.execute("BEGIN IMMEDIATE")
                        try:
                            conn.executemany(
                                "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?)", rows_in
                            )
                        except BaseException:
                            conn.execute("ROLLBACK")
                            raise
                        conn.execute("COMMIT")

                    retry_busy(write)
        return found, mine, theirs

    def release(self, model: str, keys: Sequence[str]) -> None:
        """Drop this thread's claims on ``keys`` (stored or given up)."""
        unique = list(dict.fromkeys(keys))
        with self._lock:
            _per_model_keys(self._connect(), "DELETE FROM claims", model, unique)

    def get(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``keys`` for ``model`` (missing keys are absent)."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            rows = _per_model_keys(
                self._connect(), "SELECT key, dim, vec FROM vectors", model, unique
            )
        for key, dim, blob in rows:
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.shape[0] == dim:  # a torn or foreign row is treated as a miss
                found[key] = vec
        return found

    def put(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store ``(key, vector)`` pairs for ``model`` in one transaction."""
        rows = [
            (model, key, int(vec.shape[0]), np.asarray(vec, dtype=np.float32).tobytes())
            for key, vec in items
        ]
        if not rows:
            return
        with self._lock:
            conn = self._connect()

            def write() -> None:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?, ?)", rows)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")

            retry_busy(write)

    def delete(self, keys: Sequence[str], model: str | None = None) -> int:
        """Delete the vectors of ``keys`` (for every model unless ``model`` is given)
        and checkpoint the WAL so no copy of them stays in it; returns rows deleted."""
        unique = list(dict.fromkeys(keys))
        if not unique:
            return 0
        deleted = 0
        with self._lock:
            conn = self._connect()
            for start in range(0, len(unique), _SLICE):
                part = unique[start : start + _SLICE]
                marks = ",".join("?" * len(part))
                sql, args = f"DELETE FROM vectors WHERE key IN ({marks})", tuple(part)
                if model is not None:
                    sql, args = sql + " AND model = ?", (*part, model)
                deleted += retry_busy(lambda sql=sql, args=args: conn.execute(sql, args).rowcount)
            # Best effort: a concurrent reader can hold old frames; they go at its next
            # checkpoint. TRUNCATE also resets the WAL file to zero bytes when it can.
            retry_busy(lambda: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
        return deleted

    def count(self, model: str | None = None) -> int:
        """Number of stored vectors (for one model, or all)."""
        with self._lock:
            conn = self._connect()
            if model is None:
                return int(conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
            row = conn.execute("SELECT COUNT(*) FROM vectors WHERE model = ?", (model,)).fetchone()
            return int(row[0])

    def close(self) -> None:
        """Close this process's connection (reopened on next use)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn, self._pid = None, -1


def _per_model_keys(
    conn: sqlite3.Connection, statement: str, model: str, keys: Sequence[str]
) -> list:
    """``statement`` restricted to ``model`` and ``keys``, run in slices of bound
    parameters (each slice retried while the file is busy); the rows of every slice."""
    rows: list = []
    for start in range(0, len(keys), _SLICE):
        part = keys[start : start + _SLICE]
        sql = f"{statement} WHERE model = ? AND key IN ({','.join('?' * len(part))})"
        rows += retry_busy(lambda sql=sql, part=part: conn.execute(sql, (model, *part)).fetchall())
    return rows


def _alive(owner: str, at: float, now: float) -> bool:
    """Whether the claim of ``owner`` (``host:pid:thread``) still stands: its process
    runs on this machine, or, on another machine, it was made less than CLAIM_TTL_S ago."""
    import socket

    host, pid, _ = ([*owner.rsplit(":", 2), "", ""])[:3]
    if host != socket.gethostname() or not pid.isdigit():
        return now - at < CLAIM_TTL_S
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True
