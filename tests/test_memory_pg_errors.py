"""One error type at the store's boundary on PostgreSQL: a connection that breaks inside
any write path (a pipeline, COMMIT itself) surfaces as StoreConnectionError, never as a
raw driver error, and a break during COMMIT says the write may have been applied."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chronomem import ChronoMem, HashEmbedder, StoreConnectionError
from chronomem.pg import commitfn, copying, fastwrite
from chronomem.pg import conn as pg_conn
from tests._memory_fixtures import APP, USER, add


def _store(url: str) -> ChronoMem:
    mem = ChronoMem(url, embedder=HashEmbedder())
    for i, text in enumerate(["Ann lives in Oslo", "Ann is a nurse", "Ann has a dog"]):
        mem.commit(APP, USER, [add(f"i{i}", text)], source="chat", reason="r")
    return mem


def _kill(mem: ChronoMem, url: str) -> None:
    """Terminate the store's server process from another connection."""
    import psycopg

    pid = mem.backend.conn.raw.info.backend_pid
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def _killing(mem: ChronoMem, url: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        _kill(mem, url)
        return original(*args, **kwargs)

    return wrapped


WRITES = {
    "rollback revert": lambda m: m.rollback_to_version(APP, USER, 1, mode="revert"),
    "revert_commits": lambda m: m.revert_commits(APP, USER, [2], with_dependents="keep"),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_break_inside_the_revert_pipeline_is_a_store_error(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    mem = _store(pg_url)
    before = (mem.head(APP, USER), mem.snapshot(APP, USER))
    monkeypatch.setattr(fastwrite, "write_items", _killing(mem, pg_url, fastwrite.write_items))
    with pytest.raises(StoreConnectionError, match="lost the connection"):
        WRITES[write](mem)
    monkeypatch.undo()
    assert (mem.head(APP, USER), mem.snapshot(APP, USER)) == before  # all or nothing
    assert mem.check_integrity(APP, USER) == []
    mem.close()


def test_a_break_during_commit_says_the_write_may_have_been_applied(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = _store(pg_url)
    original = pg_conn.PgConn.end

    def end(self: Any, statement: str) -> None:
        if statement.strip().upper() == "COMMIT":
            _kill(mem, pg_url)
        original(self, statement)

    monkeypatch.setattr(pg_conn.PgConn, "end", end)
    with pytest.raises(StoreConnectionError, match="during COMMIT.*may or may not"):
        mem.rollback_to_version(APP, USER, 1)
    monkeypatch.undo()
    assert mem.head(APP, USER) in (1, 2, 3) and mem.check_integrity(APP, USER) == []
    mem.close()


def test_a_break_during_the_commit_function_says_the_write_may_have_been_applied(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = _store(pg_url)
    before = mem.head(APP, USER)
    # the server process dies while the one statement that is the commit is on its way
    monkeypatch.setattr(commitfn, "payload", _killing(mem, pg_url, commitfn.payload))
    with pytest.raises(StoreConnectionError, match="during COMMIT.*may or may not"):
        mem.commit(APP, USER, [add("i9", "Ann moved to Rome")], source="chat", reason="r")
    monkeypatch.undo()
    assert mem.head(APP, USER) == before  # here it was not: the call never arrived
    mem.commit(APP, USER, [add("i9", "Ann moved to Rome")], source="chat", reason="r")
    assert mem.snapshot(APP, USER)["i9"] == "Ann moved to Rome"
    assert mem.check_integrity(APP, USER) == []
    mem.close()


def test_a_lock_wait_past_the_busy_timeout_in_the_commit_function_is_store_busy(
    pg_url: str,
) -> None:
    import psycopg

    from chronomem import StoreBusyError

    _store(pg_url).close()
    mem = ChronoMem(pg_url, embedder=HashEmbedder(), busy_timeout_ms=200)
    with psycopg.connect(pg_url) as other:  # another writer holds the scope's lock
        other.execute("SET search_path = chronomem")
        other.execute('SELECT 1 FROM scopes WHERE app = %s AND "user" = %s FOR UPDATE', (APP, USER))
        with pytest.raises(StoreBusyError, match="nothing was changed"):
            mem.commit(APP, USER, [add("i9", "Ann moved")], source="chat", reason="r")
    assert "i9" not in mem.snapshot(APP, USER)
    mem.close()


def test_a_break_during_a_copy_into_another_database_is_a_store_error(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = _store(pg_url)
    listed = copying.tables

    def listing(conn: Any, schema: str) -> list[str]:
        got = listed(conn, schema)
        if conn is mem.backend.conn:  # the source, right before its COPY TO STDOUT
            _kill(mem, pg_url)
        return got

    monkeypatch.setattr(copying, "tables", listing)
    target = pg_url + ("&" if "?" in pg_url else "?") + "options=-csearch_path%3Dcopy_target"
    with pytest.raises(StoreConnectionError, match="lost the connection"):
        mem.backend.copy(target)
    mem.close()
