"""After a redaction, retiring the WAL (chronomem.pg.wal) leaves no copy of the
erased content in pg_wal, nor anywhere in the server's data directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._memory_fixtures import APP, USER, add
from tests.test_memory_pg_redaction import SECRET, _forms
from tests.test_memory_pg_server import _store


def _files_holding(root: Path) -> list[str]:
    forms = _forms()
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name != "postmaster.pid":
            data = p.read_bytes()
            out += [f"{p.relative_to(root)}:{f.decode()}" for f in forms if f in data]
    return out


@pytest.mark.slow
def test_retire_wal_after_redact_leaves_no_copy_in_pg_wal(pg_cluster) -> None:
    import psycopg

    from tests.pg_server import fresh_database

    with fresh_database(pg_cluster.url) as url, psycopg.connect(url, autocommit=True) as admin:
        datadir = Path(admin.execute("SHOW data_directory").fetchone()[0])
        # the documented set-up: retired segments are deleted, not renamed for reuse
        admin.execute("ALTER SYSTEM SET wal_recycle = off")
        admin.execute("SELECT pg_reload_conf()")
        try:
            with _store(url) as mem:
                mem.commit(
                    APP, USER, [add("vault", f"the code is {SECRET}")], source="c", reason="r"
                )
                mem.commit(
                    APP, USER, [add("x", "harmless")], source="c", reason="r", summary=SECRET
                )
                mem.search(APP, USER, SECRET, 5)
                report = mem.redact(APP, USER, SECRET, reason="erase", by="text")
                assert report["wal_checkpointed"] is True
                admin.execute("CHECKPOINT")
                # what the issue found: the tables are clean, pg_wal is not
                left = _files_holding(datadir)
                assert left and all(f.startswith("pg_wal/") for f in left), left
                got = mem.backend.retire_wal()
                assert got["deleted_not_recycled"] is True
                assert got["segment_ended"] != got["current_segment"]
                assert _files_holding(datadir) == []  # pg_wal and every other file
                assert SECRET not in repr(mem.snapshot(APP, USER))
                assert mem.check_integrity(APP, USER) == []
        finally:
            admin.execute("ALTER SYSTEM RESET wal_recycle")
            admin.execute("SELECT pg_reload_conf()")


@pytest.mark.slow
def test_retire_wal_reaches_a_segment_recycled_before_wal_recycle_was_switched_off(
    pg_cluster,
) -> None:
    """With the default wal_recycle = on, retired segments are renamed for reuse ahead of
    the current one, old bytes and all; after wal_recycle = off, retire_wal goes on until
    WAL has passed every such file. (Here one round already left no copy: which segment
    is recycled where depends on the server's WAL sizing; an outside check with more WAL
    between the write and the setting found copies after one round, and none after four.)"""
    import psycopg

    from tests.pg_server import fresh_database

    with fresh_database(pg_cluster.url) as url, psycopg.connect(url, autocommit=True) as admin:
        datadir = Path(admin.execute("SHOW data_directory").fetchone()[0])
        assert admin.execute("SHOW wal_recycle").fetchone()[0] == "on"
        try:
            with _store(url) as mem:
                mem.commit(
                    APP, USER, [add("vault", f"the code is {SECRET}")], source="c", reason="r"
                )
                for _ in range(4):  # the secret's segment retires and is recycled ahead
                    admin.execute("SELECT pg_switch_wal()")
                    admin.execute("CHECKPOINT")
                ahead = admin.execute(
                    "SELECT count(*) FROM pg_ls_waldir() WHERE name > "
                    "pg_walfile_name(pg_current_wal_lsn()) AND name ~ '^[0-9A-F]{24}$'"
                ).fetchone()[0]
                assert ahead >= 1, "no recycled segment ahead: the case did not arise"
                admin.execute("ALTER SYSTEM SET wal_recycle = off")
                admin.execute("SELECT pg_reload_conf()")
                mem.redact(APP, USER, SECRET, reason="erase", by="text")
                got = mem.backend.retire_wal()
                assert got["deleted_not_recycled"] is True
                assert got["passed_recycled_segments"] is True and got["rounds"] >= 2
                assert _files_holding(datadir) == []
        finally:
            admin.execute("ALTER SYSTEM RESET wal_recycle")
            admin.execute("SELECT pg_reload_conf()")
