"""The PostgreSQL server the tests use, and a fresh database per test.

Where the server comes from, in order:

1. ``$CHRONOBENCH_PG_URL`` (``postgresql://user@host:port/db``; the role must be allowed
   to CREATE DATABASE): ``.ci/run`` starts a throwaway cluster and exports it;
2. otherwise a throwaway cluster this test session starts itself when PostgreSQL's
   server binaries are installed (:class:`chronomem.pg.cluster.Cluster`:
   initdb into a temp folder, loopback, a free port; stopped at session end).

When neither works the PostgreSQL tests skip with a reason that says how to point them
at a server, except in CI (``$CI`` or ``$CHRONOBENCH_REQUIRE_PG`` set), where they fail:
CI must run them. Tests that restart the server or read its data files always get a
private cluster (:func:`private_cluster`), never the server named by the URL.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

HOW_TO = (
    "PostgreSQL tests need a server: set CHRONOBENCH_PG_URL=postgresql://user@host:port/db "
    "(a role that may CREATE DATABASE), or install the server binaries (Debian: apt-get "
    "install postgresql) so the tests start a throwaway cluster themselves"
)


def required() -> bool:
    """Whether a missing server fails the tests instead of skipping them (CI)."""
    return bool(os.environ.get("CI") or os.environ.get("CHRONOBENCH_REQUIRE_PG"))


def unavailable(why: str) -> None:
    """Skip (or, in CI, fail) the current test because PostgreSQL is unavailable."""
    msg = f"{why}. {HOW_TO}"
    if required():
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


def with_database(url: str, dbname: str) -> str:
    """``url`` pointing at database ``dbname`` (user, host, port and options kept)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, parts.query, parts.fragment))


def psycopg_or_skip():  # noqa: ANN201 - the psycopg module
    """The psycopg module, or skip/fail when the ``postgres`` extra is not installed."""
    try:
        import psycopg
    except ImportError:
        unavailable("psycopg is not installed (pip install -e '.[postgres]')")
    return psycopg


class Server:
    """An admin URL on a server, lazily started when it is our own throwaway cluster."""

    def __init__(self) -> None:
        self._cluster = None
        self._url: str | None = os.environ.get("CHRONOBENCH_PG_URL") or None
        self._error: str | None = None

    def admin_url(self) -> str:
        """The URL to create databases with (starting a cluster on first use)."""
        if self._url is not None:
            return self._url
        if self._error is None:
            self._cluster, self._error = start_cluster()
            if self._cluster is not None:
                self._url = self._cluster.url
        if self._url is None:
            unavailable(self._error or "no server")
        return self._url  # type: ignore[return-value]

    def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.stop()
            self._cluster = None


def start_cluster():  # noqa: ANN201 - (Cluster | None, error | None)
    """A started private throwaway cluster, or (None, why not)."""
    from chronomem.pg.cluster import Cluster, ClusterError

    try:
        return Cluster(memory=True).start(), None
    except ClusterError as exc:
        return None, f"no PostgreSQL server could be started ({str(exc).splitlines()[0]})"


@contextlib.contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    """A new, empty database on the server of ``admin_url``; dropped afterwards."""
    psycopg = psycopg_or_skip()
    name = f"cbtest_{uuid.uuid4().hex[:16]}"
    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        unavailable(f"cannot reach PostgreSQL at {admin_url!r}: {str(exc).strip()[:300]}")
    try:
        yield with_database(admin_url, name)
    finally:
        with (
            contextlib.suppress(psycopg.Error),
            psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn,
        ):
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def private_cluster():  # noqa: ANN201 - a started Cluster
    """A cluster the caller owns (restart, data files); skips/fails when none starts."""
    psycopg_or_skip()
    cluster, error = start_cluster()
    if cluster is None:
        unavailable(error or "no server")
    return cluster
