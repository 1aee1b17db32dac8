"""The interval index that reads a state at an old version (what a branch forks from):
the fork-node arithmetic, the SQL against the plain range scan on random histories with
truncates and reverts, and a store from before the index; on both backends."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from chronomem import interval_index as ii
from chronomem.sql import alive_at
from tests._memory_fixtures import APP, USER, hash_store, on_postgres, shared_location

pytestmark = pytest.mark.usefixtures("each_backend")


def test_fork_node_lies_in_the_span_and_on_the_path_of_each_of_its_seqs() -> None:
    for lo in range(1, 70):
        for hi in range(lo + 1, 140):
            node = ii.fork_node(lo, hi)
            assert lo <= node < hi
            for p in range(lo, hi):
                right, left = ii.path(p)
                assert node in (right if node >= p else left)


def _scope(mem: Any) -> tuple[int, int]:
    return mem.conn.execute(
        'SELECT scope_id, next_seq FROM scopes WHERE app = ? AND "user" = ?', (APP, USER)
    ).fetchone()


def _random_history(mem: Any, rng: random.Random, writes: int) -> None:
    vids: list[int] = []
    for i in range(writes):
        roll = rng.random()
        if roll < 0.06 and len(vids) > 3:  # a truncate: later closes are discarded
            mem.rollback_to_version(APP, USER, rng.choice(vids[:-1]))
            vids = [v.version_id for v in mem.versions(APP, USER) if v.version_id]
            continue
        if roll < 0.1 and len(vids) > 3:
            vids.append(mem.rollback_to_version(APP, USER, rng.choice(vids), mode="revert"))
            continue
        item = f"i{rng.randrange(12)}"
        op = (
            {"op": "delete", "item_id": item}
            if rng.random() < 0.2 and item in mem.snapshot(APP, USER)
            else {"op": "update", "item_id": item, "text": f"{item} is {i}"}
        )
        vids.append(mem.commit(APP, USER, [op], source="t", reason="t"))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interval_query_equals_the_range_scan_at_every_seq(seed: int) -> None:
    with hash_store() as mem:
        _random_history(mem, random.Random(seed), 120)
        with mem.backend.transaction() as conn:
            ii.ensure(conn)
        sid, next_seq = _scope(mem)
        conn = mem.conn
        fork = ii.fork_sql(ii.is_sqlite(conn))
        rows = conn.execute(
            f"SELECT from_seq, to_seq, {fork} FROM spans WHERE scope_id = ? AND to_seq IS NOT NULL",
            (sid,),
        ).fetchall()
        assert rows and all(node == ii.fork_node(a, b) for a, b, node in rows)
        hidden = conn.execute("SELECT count(*) FROM hidden WHERE scope_id = ?", (sid,))
        assert hidden.fetchone()[0] > 0  # the history did truncate
        for p in range(next_seq + 1):
            sql, params = ii.alive_at_sql(conn, sid, p, "s.span_id")
            got = sorted(r[0] for r in conn.execute(sql, params).fetchall())
            want = conn.execute(
                f"SELECT s.span_id FROM spans s WHERE s.scope_id = ? AND {alive_at(conn, sid)} "
                "ORDER BY s.span_id",
                (sid, p, p),
            ).fetchall()
            assert got == [r[0] for r in want], p


def test_branch_from_the_past_copies_that_state_after_truncates() -> None:
    with hash_store() as mem:
        _random_history(mem, random.Random(7), 80)
        versions = [v.version_id for v in mem.versions(APP, USER) if v.version_id]
        for i, vid in enumerate(versions[:: max(1, len(versions) // 6)]):
            made = mem.branch(APP, USER, f"b{i}", at=vid)
            assert made["items"] == len(mem.snapshot(APP, USER, vid))
            mem.checkout(APP, USER, f"b{i}")
            try:
                assert mem.snapshot(APP, USER) == dict(mem.snapshot(APP, USER, vid))
            finally:
                mem.checkout(APP, USER, "main")
        assert mem.check_integrity(APP, USER) == []


def _has_fork_indexes(mem: Any) -> bool:
    sql = (
        "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname"
        if on_postgres()
        else "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name"
    )
    got = mem.conn.execute(f"{sql} IN ('spans_fork_from', 'spans_fork_to')").fetchone()
    return int(got[0]) == 2


def test_a_store_without_the_index_gains_it_on_its_first_branch_from_the_past(
    tmp_path: Path,
) -> None:
    location = shared_location(tmp_path, "old")
    with hash_store(location) as mem:
        vids = [
            mem.commit(APP, USER, [{"op": "update", "item_id": f"i{n % 3}", "text": f"t{n}"}],
                       source="t", reason="t")
            for n in range(9)
        ]  # fmt: skip
        mem.branch(APP, USER, "at-head")  # HEAD needs no interval index
        assert not _has_fork_indexes(mem)
    with hash_store(location) as mem:
        made = mem.branch(APP, USER, "past", at=vids[4])
        assert _has_fork_indexes(mem)
        assert made["items"] == 3
        mem.checkout(APP, USER, "past")
        assert mem.snapshot(APP, USER) == {"i0": "t3", "i1": "t4", "i2": "t2"}
        assert mem.check_integrity(APP, USER) == []


def _index_rows(mem: Any, scope_id: int) -> dict[str, Any]:
    """A branch scope's item rows and item-index rows, keyed by item (not by span id)."""
    conn = mem.conn
    spans = conn.execute(
        "SELECT span_id, item_id, hash, from_seq, to_seq FROM spans WHERE scope_id = ?",
        (scope_id,),
    ).fetchall()
    item_of = {sid: item for sid, item, *_ in spans}
    out: dict[str, Any] = {"spans": sorted(tuple(r[1:]) for r in spans)}
    out["blobs"] = sorted(
        conn.execute("SELECT hash, text FROM blobs WHERE scope_id = ?", (scope_id,)).fetchall()
    )
    if on_postgres():
        out["docs"] = sorted(
            (item_of[d], n, sorted(t), c)
            for d, n, t, c in conn.execute(
                "SELECT doc, len, terms, counted FROM item_docs WHERE scope_id = ?", (scope_id,)
            ).fetchall()
        )
        out["terms"] = sorted(
            (t, item_of[d], list(p))
            for t, d, p in conn.execute(
                "SELECT term, doc, pos FROM item_terms WHERE scope_id = ?", (scope_id,)
            ).fetchall()
        )
        out["df"] = sorted(
            conn.execute("SELECT term, n FROM item_df WHERE scope_id = ?", (scope_id,)).fetchall()
        )
        out["totals"] = conn.execute(
            "SELECT item_n, item_tok FROM scopes WHERE scope_id = ?", (scope_id,)
        ).fetchone()
    return out


def test_a_backends_set_based_copy_writes_the_generic_copys_rows() -> None:
    with hash_store() as mem:
        for n in range(30):
            text = f"Ann's fact number {n}: foo_bar baz {n % 4}"
            mem.commit(APP, USER, [{"op": "update", "item_id": f"i{n % 7}", "text": text}],
                       source="t", reason="t")  # fmt: skip
        mem.branch(APP, USER, "fast")
        mem.backend.copy_items = None  # an instance attribute: the generic path
        try:
            mem.branch(APP, USER, "generic")
        finally:
            del mem.backend.copy_items
        rows = {}
        for b in mem.branches(APP, USER)[1:]:
            key = mem.conn.execute(
                'SELECT scope_id FROM scopes WHERE "user" LIKE ? AND app = ?',
                (f"%\x1f{b['number']}", APP),
            ).fetchone()[0]
            rows[b["name"]] = _index_rows(mem, key)
        assert rows["fast"] == rows["generic"] and len(rows["fast"]["spans"]) == 7
        assert mem.check_integrity(APP, USER) == []
