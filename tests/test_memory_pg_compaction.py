"""PostgreSQL compaction stays linear: the statements that take erased postings out of the
per-term document counts never run a nested loop that filters the whole count table per
removed term. With one write per commit, 4,000 writes made the planner estimate the old
join's subquery at one row and compaction took 57 s in one DELETE; the emptied keys now
come back from the UPDATE and are deleted by key (1.8 s); a scope losing most of its
documents is recounted from the postings left instead. The planner's choice depends on
the tables' statistics, which this test's size does not force; it checks the plan shape
of both ways and that the counts stay exact."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chronomem import ChronoMem, HashEmbedder
from chronomem.pg import conn as pg_conn
from chronomem.pg import lexical

COMMITS, PER_COMMIT = 40, 100
WRITES = COMMITS * PER_COMMIT


def _join_filter_rows(plan: Any) -> int:
    """Rows that every node of an EXPLAIN (ANALYZE, FORMAT JSON) plan removed in a join
    filter (a nested loop comparing each outer row with each inner one)."""
    if isinstance(plan, list):
        return sum(_join_filter_rows(p) for p in plan)
    if not isinstance(plan, dict):
        return 0
    own = int(plan.get("Rows Removed by Join Filter", 0))
    return own + sum(_join_filter_rows(v) for v in plan.values() if isinstance(v, list | dict))


@pytest.mark.parametrize(
    ("target", "probed"),
    [
        # most documents go: each index's counts are recounted from the postings left
        (1, ("DELETE FROM item_df", "DELETE FROM desc_df", "INSERT INTO item_df",
             "INSERT INTO desc_df", "DELETE FROM item_terms", "DELETE FROM desc_terms")),
        # a quarter goes: the removed postings are taken out of the counts
        (3 * COMMITS // 4, ("UPDATE item_df", "UPDATE desc_df", "DELETE FROM item_df",
                            "DELETE FROM desc_df", "DELETE FROM item_terms",
                            "DELETE FROM desc_terms")),
    ],
)  # fmt: skip
def test_compaction_counts_are_updated_without_a_quadratic_join(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, target: int, probed: tuple[str, ...]
) -> None:
    mem = ChronoMem(pg_url, embedder=HashEmbedder())
    for c in range(COMMITS):  # many items per commit: the size shows, the time does not
        ops = [
            {"op": "add", "item_id": f"i{i}", "text": f"fact {i} about topic{i % 13} and word{i}"}
            for i in range(c * PER_COMMIT, (c + 1) * PER_COMMIT)
        ]
        mem.commit("app", "u", ops, source="s", reason="r")
    mem.rollback_to_version("app", "u", target)
    seen: dict[str, int] = {}
    pages: dict[str, tuple[int, int]] = {}  # postings deletes: (buffers, rows deleted)
    original = pg_conn.PgConn.execute

    def explained(self: Any, sql: str, params: Any = ()) -> Any:
        flat = " ".join(sql.split())
        head = next((p for p in probed if p in flat[:400]), None)
        if head is not None:
            # EXPLAIN ANALYZE runs the statement: undo it, so the real one runs as before
            original(self, "SAVEPOINT plan_probe")
            plan = original(
                self, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params
            ).fetchone()[0]
            original(self, "ROLLBACK TO SAVEPOINT plan_probe")
            plan = plan if not isinstance(plan, str) else json.loads(plan)
            seen[head] = max(seen.get(head, 0), _join_filter_rows(plan))
            top = plan[0]["Plan"]
            if "_terms" in head:
                outer = [p for p in top.get("Plans", []) if p["Parent Relationship"] == "Outer"]
                rows = sum(int(p["Actual Rows"]) for p in outer)
                pages[head] = (int(top.get("Shared Hit Blocks", 0))
                               + int(top.get("Shared Read Blocks", 0)), rows)  # fmt: skip
        return original(self, sql, params)

    monkeypatch.setattr(pg_conn.PgConn, "execute", explained)
    report = mem.compact("app", "u")
    monkeypatch.undo()
    assert report["versions"] == COMMITS - target
    # every statement that changes the counts or the postings ran, none filtered a join
    assert set(seen) == set(probed), seen
    assert all(rows <= WRITES for rows in seen.values()), seen
    # A removed posting is found by its whole key (a few pages each), never by scanning
    # the scope's key range once per document: that plan filtered ~4 M rows here, the right one reads 1-2 pages per posting.
    assert all(rows > 0 and hits <= 10 * rows + 2000 for hits, rows in pages.values()), pages
    # the counts are still exact: what a fresh index of HEAD would hold (once the
    # commit function's last, uncounted documents are folded in)
    lexical.fold(
        mem.conn,
        lexical.ITEMS,
        [r[0] for r in mem.conn.execute("SELECT scope_id FROM scopes").fetchall()],
    )
    df = dict(mem.conn.execute("SELECT term, n FROM item_df").fetchall())
    kept = target * PER_COMMIT
    assert all(n > 0 for n in df.values()) and f"word{kept}" not in df
    assert df.get("fact") == kept and df.get(f"word{kept - 1}") == 1
    recount = mem.conn.execute("SELECT term, count(*) FROM item_terms GROUP BY term").fetchall()
    assert df == dict(recount)
    assert mem.check_integrity("app", "u") == []
    mem.close()


def _rows_visited(plan: Any) -> int:
    """Rows every node of an EXPLAIN (ANALYZE, FORMAT JSON) plan produced, over all its
    loops (a subplan rescanned per outer row counts each rescan)."""
    if isinstance(plan, list):
        return sum(_rows_visited(p) for p in plan)
    if not isinstance(plan, dict):
        return 0
    own = int(plan.get("Actual Rows", 0)) * int(plan.get("Actual Loops", 1))
    return own + sum(_rows_visited(v) for v in plan.values() if isinstance(v, list | dict))


def test_compaction_deletes_unreferenced_texts_without_a_quadratic_subplan(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The span hashes of a 100,000-write scope outgrow work_mem, and a NOT IN subquery
    that cannot be hashed is rescanned for every text; a small work_mem shows it here."""
    mem = ChronoMem(pg_url, embedder=HashEmbedder())
    commits, per_commit = 20, 100
    for c in range(commits):
        ops = [
            {"op": "add", "item_id": f"i{i}", "text": f"fact number {i}"}
            for i in range(c * per_commit, (c + 1) * per_commit)
        ]
        mem.commit("app", "u", ops, source="s", reason="r")
    mem.rollback_to_version("app", "u", commits // 2)
    seen: list[int] = []
    original = pg_conn.PgConn.execute

    def explained(self: Any, sql: str, params: Any = ()) -> Any:
        if " ".join(sql.split()).startswith("DELETE FROM blobs"):
            original(self, "SAVEPOINT plan_probe")
            original(self, "SET LOCAL work_mem = '64kB'")
            plan = original(self, "EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()[0]
            original(self, "ROLLBACK TO SAVEPOINT plan_probe")
            seen.append(_rows_visited(plan if not isinstance(plan, str) else json.loads(plan)))
        return original(self, sql, params)

    monkeypatch.setattr(pg_conn.PgConn, "execute", explained)
    report = mem.compact("app", "u")
    monkeypatch.undo()
    texts = commits * per_commit
    assert report["blobs"] == texts // 2
    assert len(seen) == 1 and seen[0] <= 10 * texts, seen  # linear; NOT IN visited ~2,000,000
    assert mem.check_integrity("app", "u") == []
    mem.close()
