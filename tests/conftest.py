"""Shared fixtures: repository paths and the real LoCoMo file.

LoCoMo is never committed; tests read it from ``$CHRONOBENCH_LOCOMO`` or
``../shared/data/locomo10.json``. Locally a missing file skips those tests with the
reason; under CI (``CI`` set) a missing file fails them, because CI must run them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def find_locomo() -> Path | None:
    """The LoCoMo file for tests, or None."""
    env = os.environ.get("CHRONOBENCH_LOCOMO")
    if env and Path(env).is_file():
        return Path(env)
    shared = REPO_ROOT.parent / "shared" / "data" / "locomo10.json"
    return shared if shared.is_file() else None


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def locomo_path() -> Path:
    """Path to locomo10.json; skips locally (fails in CI) when it is not there."""
    path = find_locomo()
    if path is None:
        reason = (
            "LoCoMo not found: set CHRONOBENCH_LOCOMO=/path/to/locomo10.json or place it at "
            "../shared/data/locomo10.json"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def smoke_cells() -> list[list[str]]:
    """The cells of ``experiment=smoke`` (one run folder each)."""
    import yaml

    text = (REPO_ROOT / "configs" / "experiment" / "smoke.yaml").read_text()
    return list(yaml.safe_load(text)["suite"])


# ---- PostgreSQL (see tests/pg_server.py) ------------------------------------------------


@pytest.fixture(scope="session")
def pg_server():
    """The session's PostgreSQL server ($CHRONOBENCH_PG_URL, else a throwaway cluster)."""
    from tests.pg_server import Server

    server = Server()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    """URL of a fresh, empty database for this test (dropped afterwards)."""
    from tests.pg_server import fresh_database

    with fresh_database(pg_server.admin_url()) as url:
        yield url


@pytest.fixture(scope="module")
def pg_cluster():
    """A private throwaway cluster for tests that restart it or read its data files."""
    from tests.pg_server import private_cluster

    cluster = private_cluster()
    yield cluster
    cluster.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def each_backend(request):
    """Run the test on SQLite, then on PostgreSQL (see tests/_memory_fixtures.py)."""
    if request.param == "sqlite":
        yield "sqlite"
        return
    from tests import _memory_fixtures as mf
    from tests.pg_server import fresh_database

    with fresh_database(request.getfixturevalue("pg_server").admin_url()) as url:
        mf.LOCATION.update(backend="postgres", url=url)
        try:
            yield "postgres"
        finally:
            mf.LOCATION.update(backend="sqlite", url=None)
            _detach_server_caches()


@pytest.fixture
def on_postgres(request):
    """Run the test on PostgreSQL only (e.g. a unittest-style class)."""
    from tests import _memory_fixtures as mf
    from tests.pg_server import fresh_database

    with fresh_database(request.getfixturevalue("pg_server").admin_url()) as url:
        mf.LOCATION.update(backend="postgres", url=url)
        try:
            yield url
        finally:
            mf.LOCATION.update(backend="sqlite", url=None)
            _detach_server_caches()


def _detach_server_caches() -> None:
    """Stores a test left open keep their embedder's cache on the test database; it is
    dropped now, so no later test may read through it."""
    from chronobench.memory import embedders
    from chronobench.memory.pg.vectors import PgVectors

    for cache in list(embedders._CACHES.values()):
        if isinstance(cache.persistent, PgVectors):
            cache.persistent.close()
            cache.persistent = None
