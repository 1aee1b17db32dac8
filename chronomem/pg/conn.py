"""A psycopg 3 connection that speaks the store's SQL (qmark placeholders) and fails clearly.

The store's function modules write SQL with ``?`` placeholders (the subset SQLite and
PostgreSQL share, see :mod:`chronomem.backend`); :func:`translate` turns them
into psycopg's ``%s`` once per statement text. numpy scalars are adapted as numbers.

A lost connection (server restart, network, ``pg_terminate_backend``) surfaces as
  :class:`StoreConnectionError`, a :class:`~chronomem.ChronoMemError` that says
whether the interrupted write may have been applied; the next call reconnects.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from chronomem.types import StoreBusyError, StoreConnectionError

_DML = re.compile(r"\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?|%")


@functools.lru_cache(maxsize=4096)
def translate(sql: str) -> str:
    """``?`` -> ``%s`` and ``%`` -> ``%%`` outside quoted literals and identifiers."""

    def repl(m: re.Match[str]) -> str:
        tok = m.group(0)
        return "%s" if tok == "?" else "%%" if tok == "%" else tok

    return _TOKEN.sub(repl, sql)


def _register_numpy(adapters: Any) -> None:
    from psycopg.types.bool import BoolDumper
    from psycopg.types.numeric import FloatDumper, Int8Dumper

    for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32):
        adapters.register_dumper(t, Int8Dumper)
    for t in (np.float16, np.float32, np.float64):
        adapters.register_dumper(t, FloatDumper)
    adapters.register_dumper(np.bool_, BoolDumper)


def describe_url(url: str) -> str:
    """``postgresql://user@host:port/db`` of a URL: no password, no query string (for
    error messages)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(url)
    except Exception:  # noqa: BLE001 - a message helper must not raise
        return "the server"
    user = f"{info['user']}@" if info.get("user") else ""
    host, port = info.get("host", "localhost"), info.get("port", 5432)
    return f"postgresql://{user}{host}:{port}/{info.get('dbname', '')}"


def driver_message(exc: BaseException, url: str) -> str:
    """The driver's message on one line, with ``url``'s password (if any) masked."""
    from urllib.parse import unquote, urlsplit

    text = " ".join(str(exc).split())
    try:
        password = urlsplit(url).password
    except ValueError:  # a malformed URL: nothing to mask that we could find
        password = None
    for form in {password, unquote(password or "")} - {None, ""}:
        text = text.replace(str(form), "***")
    return text[:300]


class PgConn:
    """The store's view of one psycopg connection (autocommit; explicit BEGIN/COMMIT)."""

    def __init__(self, raw: Any, where: str) -> None:
        self._raw = raw
        self._begin: str | None = None  # a BEGIN not sent yet (see begin_with_next)
        import psycopg

        self._pipelines = bool(psycopg.Pipeline.is_supported())
        self.where = where
        self.in_txn = False
        self.in_read = False  # inside PostgresBackend.read_snapshot's transaction
        self.total_changes = 0  # rows inserted, updated or deleted (as sqlite3's attribute)
        self._prepared: set[bytes] = set()  # statements call_prepared made on this connection

    def _lost(self, exc: Exception, *, writing: bool) -> StoreConnectionError:
        may = (
            " The write was not applied unless the connection broke during COMMIT; read "
            "head() after reconnecting to tell."
            if writing
            else ""
        )
        why = " ".join(str(exc).split())[:200]  # one line: the CLI prints it as is
        return StoreConnectionError(
            f"lost the connection to PostgreSQL at {self.where} ({why}).{may}"
            " The store reconnects on its next call."
        )

    def translate_error(self, exc: Exception, *, committing: bool = False) -> Exception:
        """The store's error for a driver error: lost connection, lock timeout, or as is.
        ``committing``: the connection broke while COMMIT was on its way, so the write
        may or may not have been applied, which the caller must be told."""
        import psycopg

        if self.broken():
            if committing:
                why = " ".join(str(exc).split())[:200]
                return StoreConnectionError(
                    f"lost the connection to PostgreSQL at {self.where} during COMMIT "
                    f"({why}): the write may or may not have been applied; read head() "
                    "after reconnecting to tell. The store reconnects on its next call."
                )
            return self._lost(exc, writing=self.in_txn)
        if isinstance(exc, psycopg.errors.LockNotAvailable):
            return StoreBusyError(
                f"PostgreSQL at {self.where}: another writer held the lock longer than the "
                "store's busy_timeout_ms; nothing was changed, retry (or raise busy_timeout_ms)"
            )
        return exc

    @property
    def raw(self) -> Any:
        """The psycopg connection, its transaction begun (a deferred BEGIN is sent now:
        whoever runs statements on it directly runs them inside the transaction)."""
        if self._begin is not None:
            begin, self._begin = self._begin, None
            self._raw.execute(begin)
        return self._raw

    def begin_with_next(self, begin: str) -> None:
        """Send ``begin`` together with the next statement (one round trip for both)."""
        self._begin = begin

    @contextlib.contextmanager
    def driver_errors(self, *, committing: bool = False) -> Iterator[None]:
        """Run a block that uses the raw psycopg connection (pipelines, COPY, binary
        cursors) with its driver errors turned into the store's (:meth:`translate_error`),
        as every statement sent through :meth:`execute` is: one error type at the store's
        boundary, whichever path broke."""
        import psycopg

        try:
            yield
        except psycopg.OperationalError as exc:
            err = self.translate_error(exc, committing=committing)
            if err is exc:
                raise
            raise err from exc

    def end(self, statement: str) -> None:
        """``COMMIT`` or ``ROLLBACK`` the transaction; nothing to send when its deferred
        BEGIN never went out."""
        if self._begin is not None:
            self._begin = None
            return
        with self.driver_errors(committing=statement.strip().upper() == "COMMIT"):
            self._raw.execute(statement)

    def pending_begin(self) -> bool:
        """Whether the transaction's deferred BEGIN has not gone out yet (nothing sent)."""
        return self._begin is not None

    def broken(self) -> bool:
        """Whether the connection can no longer be used."""
        return bool(self._raw.closed or self._raw.broken)

    def execute(self, sql: str, params: Sequence[Any] | None = ()) -> Any:
        """Run one statement; returns the psycopg cursor (fetchone/fetchall/iteration)."""
        import psycopg

        try:
            if self._begin is not None and params and self._pipelines:
                # the deferred BEGIN and this statement in one round trip
                begin, self._begin = self._begin, None
                with self._raw.pipeline():
                    self._raw.execute(begin)
                    cur = self._run(sql, params)
            else:
                cur = self._run(sql, params)
        except psycopg.OperationalError as exc:
            err = self.translate_error(exc)
            if err is exc:
                raise
            raise err from exc
        self._count(sql, cur)
        return cur

    def call_prepared(
        self, name: str, sql: str, args: Sequence[str | bytes]
    ) -> tuple[bytes | None, ...]:
        """Run ``sql`` (``$1``... placeholders; a ``str`` argument goes as text, a
        ``bytes`` one in the binary format of the type ``sql`` casts it to) as a
        statement prepared once per connection under ``name``; its first row, each
        value as the server's text.

        Why not :meth:`execute`: psycopg's execute, which waits for the reply in its own
        loop, cost the client about 0.07 ms more CPU per call than libpq's blocking call
        (which releases the GIL while it waits), measured on a commit-sized call; for the
        one statement that is a whole commit that is a tenth of the client's CPU. Errors
        are psycopg's exceptions, as :meth:`execute` sees them (a lost connection an
        ``OperationalError``), for the caller to translate."""
        from psycopg import pq

        raw = self.raw
        pgconn, key = raw.pgconn, name.encode()
        values = [a if isinstance(a, bytes) else a.encode() for a in args]
        formats = [1 if isinstance(a, bytes) else 0 for a in args]
        with raw.lock:
            if key not in self._prepared:
                self._check(pgconn.prepare(key, sql.encode()), raw)
                self._prepared.add(key)
            res = pgconn.exec_prepared(key, values, formats)
            if res.status == pq.ExecStatus.FATAL_ERROR and (
                res.error_field(pq.DiagnosticField.SQLSTATE) == b"26000"
            ):
                # the session lost its prepared statements (DISCARD ALL): an error at
                # bind time, nothing ran; prepare again and run it once more
                self._check(pgconn.prepare(key, sql.encode()), raw)
                res = pgconn.exec_prepared(key, values, formats)
            self._check(res, raw)
        return tuple(res.get_value(0, j) for j in range(res.nfields)) if res.ntuples else ()

    @staticmethod
    def _check(res: Any, raw: Any) -> None:
        """Raise the psycopg exception for a failed libpq result."""
        import psycopg
        from psycopg import pq

        if res.status in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK):
            return
        if raw.pgconn.status == pq.ConnStatus.BAD:
            message = raw.pgconn.get_error_message() or res.get_error_message()
            raise psycopg.OperationalError(message or "the connection to the server was lost")
        raise psycopg.errors.error_from_result(res, encoding=raw.info.encoding)

    def _run(self, sql: str, params: Sequence[Any] | None) -> Any:
        if not params:  # no placeholders: the text runs as written (may hold several)
            return self.raw.execute(sql)
        return self.raw.execute(translate(sql), tuple(params))

    def _count(self, sql: str, cur: Any) -> None:
        if _DML.match(sql) and cur.rowcount and cur.rowcount > 0:
            self.total_changes += cur.rowcount

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        """Run one statement per row (pipelined by psycopg)."""
        import psycopg

        rows = [tuple(r) for r in rows]
        if not rows:
            return None
        try:
            with self.raw.cursor() as cur:
                cur.executemany(translate(sql), rows)
                self._count(sql, cur)
                return cur
        except psycopg.OperationalError as exc:
            err = self.translate_error(exc)
            if err is exc:
                raise
            raise err from exc

    def close(self) -> None:
        self._raw.close()


FLOAT4_ARRAY_OID = 1021  # pg_type oid of float4[] (fixed in every PostgreSQL)


def psycopg_module() -> Any:
    """psycopg 3, or an ImportError that says how to install it."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "ChronoMem on PostgreSQL needs psycopg 3: pip install 'chronomem[postgres]'"
        ) from exc
    return psycopg


def float4_loader(psycopg: Any) -> Any:
    """A binary loader of ``float4[]`` into a float32 numpy vector (1-D, no NULLs)."""
    from psycopg.adapt import Loader

    class Float4ArrayLoader(Loader):
        format = psycopg.pq.Format.BINARY

        def load(self, data: Any) -> np.ndarray:
            buf = bytes(data)
            ndim = int.from_bytes(buf[0:4], "big")
            if ndim == 0:
                return np.zeros(0, dtype=np.float32)
            # header: ndim, has-null flag, element oid, then (size, lower bound) per dim;
            # each element: int32 length, 4 bytes big-endian float.
            body = np.frombuffer(buf, dtype=[("n", ">i4"), ("v", ">f4")], offset=12 + 8 * ndim)
            return body["v"].astype(np.float32)

    return Float4ArrayLoader


def float4_array_binary(values: np.ndarray) -> bytes:
    """A one-dimensional ``float4[]`` (no NULLs) in PostgreSQL's binary format, the
    inverse of :func:`float4_loader`'s load: the header (dimensions, no-null flag,
    element oid 700, then size and lower bound 1), each element its length (4) and
    the big-endian float."""
    flat = np.asarray(values, np.float32).ravel()
    if not len(flat):
        return (0).to_bytes(4, "big") * 2 + (700).to_bytes(4, "big")
    body = np.empty(len(flat), dtype=[("n", ">i4"), ("v", ">f4")])
    body["n"] = 4
    body["v"] = flat
    head = np.array([1, 0, 700, len(flat), 1], dtype=">i4")
    return head.tobytes() + body.tobytes()


def quote_ident(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def connect_raw(url: str, schema: str | None, busy_timeout_ms: int, application: str) -> Any:
    """A psycopg connection in autocommit mode: numpy numbers, ``float4[]`` as numpy,
    ``lock_timeout`` = the busy timeout, ``search_path`` = ``schema`` (if given)."""
    psycopg = psycopg_module()
    try:
        raw = psycopg.connect(
            url, autocommit=True, connect_timeout=30, application_name=application
        )
    except psycopg.OperationalError as exc:
        raise StoreConnectionError(
            f"cannot connect to PostgreSQL at {describe_url(url)}: {driver_message(exc, url)}; "
            "check that the server runs and the URL (postgresql://user@host:port/db; the "
            "password in ~/.pgpass or $PGPASSWORD rather than the URL)"
        ) from exc
    _register_numpy(raw.adapters)
    raw.adapters.register_loader(FLOAT4_ARRAY_OID, float4_loader(psycopg))
    raw.execute(f"SET lock_timeout = {int(busy_timeout_ms)}")
    if schema is not None:
        raw.execute("SELECT set_config('search_path', %s, false)", (quote_ident(schema),))
    return raw
