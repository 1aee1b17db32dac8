"""After a redaction, retiring the WAL (chronobench.memory.pg.wal) leaves no copy of the
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
