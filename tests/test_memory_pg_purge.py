"""PostgreSQL erasure rewrites what it must and no more: after a redaction the tables the
erasing transaction changed get new files (``VACUUM FULL``), the others keep theirs (a
rewrite costs the table's size, not what was erased); a purge with nobody saying what
changed rewrites every table. The byte-level checks (no secret left in any heap, index
or TOAST file) are ``test_memory_redaction.py``'s, on both backends."""

from __future__ import annotations

import re
from typing import Any

import pytest

from chronomem import ChronoMem, HashEmbedder
from chronomem.pg import rewrite
from chronomem.pg.schema import PARTITIONS
from chronomem.types import StoreConnectionError


def _files(mem: ChronoMem) -> dict[str, int]:
    rows = mem.conn.execute(
        "SELECT c.relname, c.relfilenode FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'"
    ).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def _moved(before: dict[str, int], after: dict[str, int]) -> set[str]:
    """The tables with new files, a partition named by its table."""
    return {re.sub(r"_p\d\d$", "", t) for t in before if after[t] != before[t]}


def _store(pg_url: str) -> ChronoMem:
    mem = ChronoMem(pg_url, embedder=HashEmbedder())
    mem.commit(
        "app",
        "u",
        [{"op": "add", "item_id": "door", "text": "door code zq81x"}],
        source="s",
        reason="r",
    )
    mem.commit(
        "app",
        "u",
        [{"op": "add", "item_id": "pet", "text": "the cat is Momo"}],
        source="s",
        reason="r",
    )
    return mem


def test_a_redaction_rewrites_only_the_tables_it_changed(pg_url: str) -> None:
    mem = _store(pg_url)
    try:
        before = _files(mem)
        mem.redact("app", "u", "door", reason="asked", by="id")
        after = _files(mem)
        moved = _moved(before, after)
        # where the item's rows were: its text, span, postings, descriptor
        assert {"blobs", "spans", "item_terms", "item_docs", "versions", "desc_terms"} <= moved
        # nothing of the item was ever there (or, as the scope's counters, could be):
        # not rewritten
        assert not moved & {"meta", "hidden", "scopes", "answers", "answer_items"}
        assert mem.snapshot("app", "u") == {"pet": "the cat is Momo"}
    finally:
        mem.close()


def test_a_redaction_rewrites_only_the_partitions_holding_the_items_rows(pg_url: str) -> None:
    mem = _store(pg_url)
    try:
        mem.commit(  # words the door's text shares: their counts only go down
            "app",
            "u",
            [{"op": "add", "item_id": "gate", "text": "gate code 1234"}],
            source="s",
            reason="r",
        )
        where = (
            "SELECT DISTINCT t.tableoid::regclass::text FROM item_terms t JOIN spans s "
            "ON s.span_id = t.doc WHERE s.item_id = 'door'"
        )
        postings = {r[0] for r in mem.conn.execute(where).fetchall()}
        # the partitions of the door's words no other text has: their counts go
        # (deleted); the others' go down (an update of a count leaves no content behind)
        alone = {
            r[0]
            for r in mem.conn.execute(
                "SELECT DISTINCT f.tableoid::regclass::text FROM item_df f JOIN item_terms t "
                "ON t.term = f.term JOIN spans s ON s.span_id = t.doc "
                "WHERE s.item_id = 'door' AND f.n = 1"
            ).fetchall()
        }
        before = _files(mem)
        mem.redact("app", "u", "door", reason="asked", by="id")
        after = _files(mem)
        moved = {t for t in before if after[t] != before[t]}
        assert {t for t in moved if t.startswith("item_terms_")} == postings
        assert len(postings) == 1  # one text, one document, one partition
        assert {t for t in moved if t.startswith("item_df_")} == alone
        # "code" (the gate's too) is only counted down: alone, it moves no partition
        assert len(alone) < PARTITIONS
        assert len([t for t in moved if t.startswith("desc_terms_")]) <= 2
    finally:
        mem.close()


def test_a_purge_nobody_scoped_rewrites_every_table(pg_url: str) -> None:
    mem = _store(pg_url)
    try:
        before = _files(mem)
        assert mem._db.purge() is True
        after = _files(mem)
        # every table but the schema's version row (which no write ever erases)
        assert {t for t in before if after[t] == before[t]} == {"meta"}
    finally:
        mem.close()


def test_without_the_servers_counts_a_redaction_rewrites_every_table(pg_url: str) -> None:
    mem = _store(pg_url)
    try:
        try:  # a superuser's setting; the test clusters' user is one
            mem.conn.execute("SET track_counts = off")
        except Exception as exc:  # noqa: BLE001 - a server that refuses it: nothing to show
            pytest.skip(f"cannot switch track_counts off here: {exc}")
        before = _files(mem)
        mem.redact("app", "u", "door", reason="asked", by="id")
        after = _files(mem)
        assert {t for t in before if after[t] == before[t]} == {"meta"}
    finally:
        mem.close()


def test_a_purge_shares_the_tables_between_connections_and_closes_them(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = _store(pg_url)
    opened: list[Any] = []
    real = mem._db._helper

    def helper() -> Any:
        opened.append(real())
        return opened[-1]

    monkeypatch.setattr(rewrite, "LANES", 3)
    monkeypatch.setattr(mem._db, "_helper", helper)
    try:
        before = _files(mem)
        mem.redact("app", "u", "door", reason="asked", by="id")
        assert len(opened) == 2 and all(c.broken() for c in opened)  # used, then closed
        assert {"blobs", "item_terms"} <= _moved(before, _files(mem))
    finally:
        mem.close()


def test_a_lane_whose_connection_fails_is_run_on_the_stores_own(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = _store(pg_url)

    def refused() -> Any:
        raise StoreConnectionError("too many clients")

    monkeypatch.setattr(mem._db, "_helper", refused)
    try:
        before = _files(mem)
        mem.redact("app", "u", "door", reason="asked", by="id")
        moved = _moved(before, _files(mem))
        assert {"blobs", "spans", "item_terms", "item_docs", "versions", "desc_terms"} <= moved
    finally:
        mem.close()


def test_lanes_deal_the_largest_tables_to_the_lighter_lane() -> None:
    sizes = {"a": 10, "b": 6, "c": 5, "d": 1}
    assert rewrite.lanes(sizes) == [["a", "d"], ["b", "c"]]
    assert rewrite.lanes({"only": 3}) == [["only"]]
