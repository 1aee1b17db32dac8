"""PostgreSQL redaction: the erased bytes are gone from the heap, TOAST and index files."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests._memory_fixtures import APP, USER, add
from tests.test_memory_pg_server import _store

# ---- redaction, down to the data files -------------------------------------------------------

SECRET = "Zq7xVaultCode"


def _forms() -> set[bytes]:
    """The secret as the store could hold it: as written, lower-cased, and stemmed."""
    from chronomem.pg.lexical import tokenizer

    stems = {t for toks in tokenizer().tokens([SECRET]) for t in toks}
    return {f.encode() for f in {SECRET, SECRET.lower(), *stems}}


def _database_files(conn) -> tuple[list[Path], list[Path]]:
    """(files of ChronoMem's relations: heap, TOAST and index forks and segments; every
    file of the database's directory)."""
    import re

    datadir = Path(conn.execute("SHOW data_directory").fetchone()[0])
    rels = conn.execute(
        "WITH t AS (SELECT c.oid, c.reltoastrelid FROM pg_class c JOIN pg_namespace n ON "
        "n.oid = c.relnamespace WHERE n.nspname = 'chronomem' AND c.relkind = 'r'), "
        "heaps AS (SELECT oid FROM t UNION SELECT reltoastrelid FROM t WHERE reltoastrelid <> 0) "
        "SELECT pg_relation_filepath(oid) FROM heaps UNION "
        "SELECT pg_relation_filepath(i.indexrelid) FROM pg_index i JOIN heaps h ON h.oid = i.indrelid"
    ).fetchall()
    mine: list[Path] = []
    for (rel,) in rels:
        base = datadir / rel
        pattern = re.compile(rf"^{re.escape(base.name)}(_fsm|_vm|_init)?(\.\d+)?$")
        mine += [p for p in base.parent.iterdir() if pattern.match(p.name)]
    dboid = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
    everything = sorted((datadir / "base" / str(dboid.fetchone()[0])).iterdir())
    return mine, everything


def _leaks(files: list[Path]) -> list[str]:
    forms = _forms()
    return [f"{p.name}:{f.decode()}" for p in files for f in forms if f in p.read_bytes()]


@pytest.mark.slow
def test_redaction_leaves_no_bytes_in_heap_toast_or_index_files(pg_cluster) -> None:
    import psycopg

    from tests.pg_server import fresh_database

    rng = random.Random(5)
    noise = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789 ") for _ in range(6000))
    with fresh_database(pg_cluster.url) as url, _store(url) as mem:
        mem.commit(APP, USER, [add("city", "Ann lives in Oslo")], source="chat", reason="r")
        mem.commit(APP, USER, [add("job", "Ann is a nurse")], source="chat", reason="r")
        mem.commit(APP, USER, [add("vault", f"the vault code is {SECRET}")], source="c", reason="r")
        # long and incompressible: stored out of line, in the TOAST table
        mem.commit(APP, USER, [add("long", f"{noise} {SECRET} {noise}")], source="c", reason="r")
        mem.commit(APP, USER, [add("x", "harmless")], source="c", reason="r", summary=f"{SECRET}!")
        mem.commit(
            APP, USER, [add("y", "harmless 2")], source="c", reason="r", labels={"t": SECRET}
        )
        mem.record_answer(APP, USER, f"Your code is {SECRET}.", ["vault"])
        mem.rollback_to_version_by_nl_query(
            APP, USER, f"undo the nurse job {SECRET}", mode="revert"
        )
        mem.search(APP, USER, SECRET, 5)
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("ANALYZE")
            admin.execute("CHECKPOINT")  # every dirty page is in the files now
            mine, everything = _database_files(admin)
            assert _leaks(mine), "the scan cannot see the secret before redaction"
            toast = admin.execute(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "JOIN pg_class t ON t.oid = c.reltoastrelid WHERE n.nspname = 'chronomem' AND "
                "c.relname ~ '^blobs(_p[0-9]+)?$' AND pg_relation_size(t.oid) > 0"
            ).fetchone()[0]
            assert toast == 1, "the long text did not go to the TOAST table"
            report = mem.redact(APP, USER, SECRET, reason="erase", by="text")
            assert report["wal_checkpointed"] is True and report["contents"] == 2
            admin.execute("CHECKPOINT")
            mine, everything = _database_files(admin)
            assert _leaks(mine) == []
            assert _leaks(everything) == []  # nor anywhere else in the database's directory
            stats = admin.execute(
                "SELECT count(*) FROM pg_stats WHERE schemaname = 'chronomem' AND "
                "(most_common_vals::text || ' ' || coalesce(histogram_bounds::text, '')) "
                "ILIKE %s",
                (f"%{SECRET}%",),
            ).fetchone()[0]
            assert stats == 0  # content columns carry no planner statistics
        assert SECRET not in repr(mem.versions(APP, USER)) + repr(mem.snapshot(APP, USER))
        assert mem.check_integrity(APP, USER) == []
