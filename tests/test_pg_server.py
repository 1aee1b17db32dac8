"""The PostgreSQL test server: fresh database per test, skip/fail rule."""

from __future__ import annotations

import pytest

from tests import pg_server


def test_each_test_gets_a_fresh_empty_database(pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', "
            "'information_schema')"
        ).fetchone()[0]
        assert tables == 0
        conn.execute("CREATE TABLE mark (x int)")
    assert pg_url.rsplit("/", 1)[1].startswith("cbtest_")


def test_with_database_keeps_user_host_port_and_options() -> None:
    url = "postgresql://u:p@h:5433/one?sslmode=disable"
    assert pg_server.with_database(url, "two") == "postgresql://u:p@h:5433/two?sslmode=disable"


def test_unavailable_skips_locally_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("CHRONOBENCH_REQUIRE_PG", raising=False)
    with pytest.raises(pytest.skip.Exception, match="CHRONOBENCH_PG_URL"):
        pg_server.unavailable("no server")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CHRONOBENCH_PG_URL"):
        pg_server.unavailable("no server")
