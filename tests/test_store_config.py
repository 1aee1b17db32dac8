"""The store backend config group: sqlite (default, published) and postgres (a URL)."""

from __future__ import annotations

import pytest

from chronobench.errors import ConfigError
from chronobench.spec import RunSpec, StoreSpec, spec_sha256


def _spec(**store) -> RunSpec:
    return RunSpec.model_validate(
        {
            "dataset": {"name": "locomo", "granularity": "session"},
            "system": {"name": "chronomem"},
            "backbone": {"name": "extractive", "model": "x"},
            "task": {"selection": True},
            "selectors": ["bm25"],
            **({"store": store} if store else {}),
        }
    )


def test_sqlite_is_the_default_and_leaves_run_ids_unchanged() -> None:
    assert _spec().store == StoreSpec()
    assert spec_sha256(_spec()) == spec_sha256(_spec(backend="sqlite"))
    assert "store" not in _spec().identity()


def test_postgres_runs_are_told_apart_and_never_published() -> None:
    pg = _spec(backend="postgres", url="postgresql://u:pw@h:5432/db")
    assert spec_sha256(pg) != spec_sha256(_spec())
    assert pg.identity()["store"] == "postgres" and "url" not in str(pg.identity())
    assert not pg.published and _spec().published
    assert pg.model_dump(mode="json")["store"]["url"] == "postgresql://u:***@h:5432/db"
    assert "store=postgres" in pg.describe()


def test_postgres_without_a_url_is_a_config_error() -> None:
    from chronobench.runner.components import resolve_cell

    with pytest.raises(ConfigError, match="CHRONOBENCH_PG_URL"):
        resolve_cell(_spec(backend="postgres"))


def _free_port() -> int:
    import socket

    with socket.socket() as sock:  # bound, then closed: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_server_is_one_line_naming_the_url_without_its_password() -> None:
    pytest.importorskip("psycopg")
    from types import SimpleNamespace

    from chronobench.errors import is_expected
    from chronobench.runner.experiment import check_store_servers
    from chronomem import StoreConnectionError

    port = _free_port()
    url = f"postgresql://alice:s3cr%40t@127.0.0.1:{port}/bench"
    cells = [
        SimpleNamespace(spec=_spec()),
        SimpleNamespace(spec=_spec(backend="postgres", url=url)),
    ]
    with pytest.raises(ConfigError) as err:
        check_store_servers(cells)  # before any cell runs
    msg = str(err.value)
    assert "\n" not in msg and "s3cr" not in msg
    assert f"postgresql://alice@127.0.0.1:{port}/bench" in msg
    assert "store.url" in msg and "CHRONOBENCH_PG_URL" in msg and "start the server" in msg
    check_store_servers([SimpleNamespace(spec=_spec())])  # SQLite: nothing to reach
    # A connection lost mid-run is an expected error too (two lines, exit 2).
    assert is_expected(StoreConnectionError("lost the connection"))


def test_a_running_server_passes_the_check(pg_url: str) -> None:
    from types import SimpleNamespace

    from chronobench.runner.experiment import check_store_servers

    check_store_servers([SimpleNamespace(spec=_spec(backend="postgres", url=pg_url))])


def test_driver_messages_lose_the_password_and_the_line_breaks() -> None:
    pytest.importorskip("psycopg")
    from chronomem.pg.conn import describe_url, driver_message

    url = "postgresql://bob:p%40ss@db.example:6543/x?sslmode=require"
    assert describe_url(url) == "postgresql://bob@db.example:6543/x"
    text = driver_message(RuntimeError("failed for p@ss\n\tand p%40ss again"), url)
    assert text == "failed for *** and *** again"


def test_store_postgres_without_psycopg_names_the_extra(monkeypatch) -> None:
    import importlib.util

    from chronobench.errors import MissingDependencyError
    from chronobench.runner.components import resolve_cell

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "psycopg" else real(name, *a)
    )
    with pytest.raises(MissingDependencyError, match=r"chronobench\[postgres\]"):
        resolve_cell(_spec(backend="postgres", url="postgresql://u@h/db"))
