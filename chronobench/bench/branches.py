"""Cost of ChronoMem branches vs history length (``python -m chronobench bench branches``).

For each backend and history length N it writes N commits into a fresh store, each
updating one of ``--items`` items (so the state holds the same number of items at every
N and only the history grows), then times, ``--repeat`` times each: ``branch`` at HEAD,
``branch`` at the middle of the history, ``checkout`` of a branch and back to main, and
a truncate rollback for scale (the store's O(1) operation), after a first branch
from the past, which builds the interval index once (timed, as a row of its own).
The goal is that branch and checkout cost the same at every N: a branch copies the
items of the state it forks from (so it grows with the items, which ``--items``
varies), never the history; the last column is the ratio of the longest history's cost
to the shortest's.

Filling PostgreSQL: the writes go through the store's own ``commit_many`` (the server
commit function, one transaction per commit), with ``synchronous_commit`` off on the
bench's connection while it fills, so a commit does not wait for its WAL flush: the
rows are the commits' own, only durability against an OS crash is waived, and it is
set back before anything is timed. Then ``VACUUM ANALYZE``, as autovacuum would after
such a burst (see :func:`_fill`).

Beside the times (which a loaded machine stretches), two counts the load does not
change: SQLite's virtual-machine instructions per branch, and on PostgreSQL the rows
the server read (its table statistics).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

APP, USER = "bench", "u"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommand's arguments."""
    parser.add_argument(
        "--writes", type=int, nargs="+", default=[10_000, 100_000], help="history lengths"
    )
    parser.add_argument("--items", type=int, default=1_000, help="items in the state")
    parser.add_argument("--repeat", type=int, default=5, help="timings per operation")
    parser.add_argument(
        "--backend",
        choices=["sqlite", "postgres"],
        nargs="+",
        default=["sqlite"],
        help="store backends, each measured in turn (default: sqlite)",
    )
    parser.add_argument("--pg-url", default=None, help="PostgreSQL URL ($CHRONOBENCH_PG_URL)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")


def _store(backend: str, folder: Path, n: int, pg_url: str | None) -> Any:
    from chronomem import ChronoMem, HashEmbedder

    if backend == "postgres":
        from chronomem.pg.temporary import temporary_store

        return temporary_store(pg_url, embedder=HashEmbedder())
    return ChronoMem(folder / f"branches-{n}.db", embedder=HashEmbedder())


def _fill(mem: Any, n: int, items: int, backend: str) -> list[int]:
    vids: list[int] = []
    batch = 1_000
    if backend == "postgres":
        mem.conn.execute("SET synchronous_commit = off")  # see the module's docstring
    try:
        for start in range(0, n, batch):
            writes = [
                {
                    "ops": [{"op": "update", "item_id": f"item-{i % items}", "text": f"fact {i}"}],
                    "source": "bench",
                    "reason": "fill",
                }
                for i in range(start, min(n, start + batch))
            ]
            vids += mem.commit_many(APP, USER, writes)
    finally:
        if backend == "postgres":
            mem.conn.execute("RESET synchronous_commit")
    if backend == "postgres":
        # what autovacuum does after a burst of writes, done now so that every history
        # length is timed in the same state: until then each closed span leaves a dead
        # row version behind in the index of open spans, which every read of HEAD steps
        # over (at most the writes since the last vacuum)
        mem.conn.execute("VACUUM ANALYZE")
    return vids


def _median_ms(values: list[float]) -> float:
    return 1000 * statistics.median(values)


def measure(mem: Any, vids: list[int], repeat: int) -> dict[str, float]:
    """Median milliseconds of each operation on a filled store."""
    times: dict[str, list[float]] = {"first branch from the past (builds the index)": []}
    times.update({"branch at HEAD": [], "branch mid-history": []})
    times.update({"checkout branch": [], "checkout main": [], "truncate rollback": []})
    t = time.perf_counter()
    mem.branch(APP, USER, "first", at=vids[len(vids) // 3])
    times["first branch from the past (builds the index)"].append(time.perf_counter() - t)
    for r in range(repeat):
        t = time.perf_counter()
        mem.branch(APP, USER, f"head-{r}")
        times["branch at HEAD"].append(time.perf_counter() - t)
        t = time.perf_counter()
        mem.branch(APP, USER, f"mid-{r}", at=vids[len(vids) // 2])
        times["branch mid-history"].append(time.perf_counter() - t)
        t = time.perf_counter()
        mem.checkout(APP, USER, f"head-{r}")
        times["checkout branch"].append(time.perf_counter() - t)
        t = time.perf_counter()
        mem.checkout(APP, USER, "main")
        times["checkout main"].append(time.perf_counter() - t)
    # a truncate of the last write on a branch (main stays whole for the next timings)
    mem.checkout(APP, USER, "head-0")
    for r in range(repeat):
        mem.commit(APP, USER, [{"op": "add", "item_id": "x", "text": f"x {r}"}], source="b",
                   reason="b")  # fmt: skip
        head = mem.head(APP, USER)
        t = time.perf_counter()
        mem.rollback_to_version(APP, USER, mem.versions(APP, USER)[-2].version_id)
        times["truncate rollback"].append(time.perf_counter() - t)
        assert mem.head(APP, USER) != head
    mem.checkout(APP, USER, "main")
    assert mem.check_integrity(APP, USER) == [], "branching broke the store"
    out = {k: _median_ms(v) for k, v in times.items()}
    head = lambda: mem.branch(APP, USER, "work-head")  # noqa: E731
    mid = lambda: mem.branch(APP, USER, "work-mid", at=vids[len(vids) // 2])  # noqa: E731
    if isinstance(mem.conn, sqlite3.Connection):
        out["branch at HEAD, SQLite VM steps (thousands)"] = _steps(mem, head)
        out["branch mid-history, SQLite VM steps (thousands)"] = _steps(mem, mid)
    else:
        out["branch at HEAD, rows read (PostgreSQL statistics)"] = _rows_read(mem, head)
        out["branch mid-history, rows read (PostgreSQL statistics)"] = _rows_read(mem, mid)
    return out


def _rows_read(mem: Any, run: Callable[[], Any]) -> float:
    """Rows PostgreSQL read from the store's tables (sequential scans and index fetches,
    its own statistics) while ``run`` ran: what the server visited, whatever the load.
    The bench's connection is the store's only one, so the counters are its own."""

    def total() -> int:
        mem.conn.execute("SELECT pg_stat_force_next_flush()")  # at the next idle moment
        time.sleep(0.2)
        mem.conn.execute("SELECT pg_stat_clear_snapshot()")
        got = mem.conn.execute(
            "SELECT sum(COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0)) "
            "FROM pg_stat_user_tables WHERE schemaname = current_schema()"
        ).fetchone()[0]
        return int(got or 0)

    before = total()
    run()
    return float(total() - before)


def _steps(mem: Any, run: Callable[[], Any]) -> float:
    """Thousands of SQLite virtual-machine instructions ``run`` executes: the work the
    database does, which a loaded machine does not change (the times above it does)."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0  # 0: go on

    mem.conn.set_progress_handler(tick, 1000)
    try:
        run()
    finally:
        mem.conn.set_progress_handler(None, 0)
    return float(count[0])


def table(rows: list[tuple[int, dict[str, float]]], items: int, backend: str) -> str:
    """The medians as a Markdown table, one column per history length, and the ratio of
    the last column to the first."""
    ops = list(rows[0][1])
    ratio = len(rows) > 1
    head = "| operation | " + " | ".join(f"{n:,} writes" for n, _ in rows) + " |"
    if ratio:
        head += f" {rows[-1][0]:,} / {rows[0][0]:,} |"
    lines = [
        f"Branch and checkout cost, {backend}, {items:,} items in the state "
        "(median ms; hash embedder):",
        "",
        head,
        "|---|" + "---:|" * (len(rows) + ratio),
    ]
    for op in ops:
        line = f"| {op} | " + " | ".join(f"{r[op]:.2f}" for _, r in rows) + " |"
        if ratio:
            first, last = rows[0][1][op], rows[-1][1][op]
            line += f" {last / first:.2f} |" if first > 0 else " - |"
        lines.append(line)
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    """Entry point of ``bench branches``."""
    if args.repeat < 1 or args.items < 1 or any(n < 3 for n in args.writes):
        raise SystemExit("--repeat and --items: at least 1; --writes: each at least 3")
    pg_url = args.pg_url or os.environ.get("CHRONOBENCH_PG_URL")
    if "postgres" in args.backend and not pg_url:
        raise SystemExit(
            "bench branches --backend postgres: pass --pg-url or set $CHRONOBENCH_PG_URL"
        )
    tables = []
    with tempfile.TemporaryDirectory(prefix="chronobench-branches-") as tmp:
        for backend in args.backend:
            rows = []
            for n in args.writes:
                mem = _store(backend, Path(tmp), n, pg_url)
                try:
                    t = time.perf_counter()
                    vids = _fill(mem, n, args.items, backend)
                    took = time.perf_counter() - t
                    print(f"{backend}: {n:,} writes filled in {took:.1f} s", flush=True)
                    rows.append((n, measure(mem, vids, args.repeat)))
                finally:
                    mem.close()
            tables.append(table(rows, args.items, backend))
            print(tables[-1], flush=True)
    if args.out is not None:
        from chronobench.fileio import atomic_write_text

        atomic_write_text(args.out, "\n".join(tables))
    return 0
