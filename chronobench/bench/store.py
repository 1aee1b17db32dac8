"""Speed benchmark of the ChronoMem store (``python -m chronobench bench store``).

For each stream size it loads a synthetic stream into an on-disk store and reports
commit latency at that size, truncate/revert rollback latency to an early and a
late target (truncate hides the discarded history in O(1), so early and late
should cost the same; revert writes the items that differ), the rows each
rollback wrote, compaction time, hybrid resolve latency without a reranker, and
bytes on disk per write; then write throughput with 1, 4 and 16 concurrent writer
processes (:mod:`chronobench.bench.concurrency`). ``--backend sqlite postgres`` runs
both backends in one go (PostgreSQL: ``--pg-url`` or ``$CHRONOBENCH_PG_URL``, else a
throwaway local cluster). A markdown summary table closes the output.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chronobench.bench.synthetic import NAMES, THINGS, VERBS, synthetic_writes
from chronomem import ChronoMem, HashEmbedder, resolve_embedder


def _ms(values: list[float]) -> str:
    vals = sorted(values)
    p95 = vals[min(len(vals) - 1, int(round(0.95 * (len(vals) - 1))))]
    return f"median {1000 * statistics.median(vals):7.2f} ms   p95 {1000 * p95:7.2f} ms"


def _timed(fn: Callable[[], Any], cpu: list[float] | None = None) -> float:
    """Wall seconds of ``fn()``; its process CPU seconds are appended to ``cpu`` when
    given (on a loaded machine wall time also counts the waits for a core)."""
    t, c = time.perf_counter(), time.process_time()
    fn()
    if cpu is not None:
        cpu.append(time.process_time() - c)
    return time.perf_counter() - t


SQLITE_FULL = "sqlite-full"  # SQLite with synchronous=FULL: PostgreSQL's durability


class Location:
    """Where one backend's benchmark stores live: SQLite files in a folder, or temporary
    schemas on a PostgreSQL server."""

    def __init__(self, backend: str, workdir: Path, pg_url: str | None = None) -> None:
        self.backend, self.workdir, self.pg_url = backend, workdir, pg_url

    def new(self, name: str, embedder: Any) -> ChronoMem:
        if self.backend == "postgres":
            from chronomem.pg.temporary import temporary_store

            return temporary_store(self.pg_url, embedder=embedder)
        return self.tuned(ChronoMem(self.workdir / f"{name}.db", embedder=embedder))

    def clone(self, mem: ChronoMem, name: str) -> ChronoMem:
        if self.backend == "postgres":
            return mem.clone()  # a temporary schema, dropped on close
        return self.tuned(mem.clone(self.workdir / f"{name}.db"))

    @property
    def pragma(self) -> str | None:
        """The statement each new SQLite connection of this backend runs first."""
        return "PRAGMA synchronous = FULL" if self.backend == SQLITE_FULL else None

    def tuned(self, mem: ChronoMem) -> ChronoMem:
        if self.pragma:
            mem.conn.execute(self.pragma)
        return mem

    def durability(self) -> str:
        """What a returned commit survives on this backend, in words."""
        if self.backend == "postgres":
            import psycopg

            with psycopg.connect(self.pg_url, autocommit=True) as conn:
                got = {
                    name: conn.execute(f"SHOW {name}").fetchone()[0]
                    for name in ("synchronous_commit", "fsync", "wal_sync_method")
                }
            flushed = got["fsync"] == "on" and got["synchronous_commit"] != "off"
            what = (
                "the WAL is flushed to disk before each commit returns: survives an OS crash"
                if flushed
                else "commits return before the WAL reaches the disk: an OS crash can lose "
                "the last ones"
            )
            return (
                f"synchronous_commit={got['synchronous_commit']}, fsync={got['fsync']}, "
                f"wal_sync_method={got['wal_sync_method']}: {what}"
            )
        if self.backend == SQLITE_FULL:
            return (
                "WAL, synchronous=FULL: the WAL is synced before each commit returns: "
                "survives an OS crash"
            )
        return (
            "WAL, synchronous=NORMAL (the store's default): survives a process crash; an OS "
            "crash can lose the last commits (the WAL is synced at checkpoints)"
        )

    def size(self, mem: ChronoMem, name: str) -> int:
        """Bytes the store takes: the file after a WAL checkpoint; tables, TOAST and
        indexes of the schema on PostgreSQL (WAL not counted)."""
        if self.backend == "postgres":
            return int(
                mem.conn.execute(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = "
                    "current_schema() AND c.relkind = 'r' AND c.relname <> 'embeddings'"
                ).fetchone()[0]
            )
        mem.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return (self.workdir / f"{name}.db").stat().st_size

    def remove(self, name: str) -> None:
        if self.backend != "postgres":
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.workdir}/{name}.db{suffix}").unlink(missing_ok=True)

    def shared(self, name: str) -> str:
        """A location several processes open (the concurrency benchmark)."""
        if self.backend == "postgres":
            from chronomem.pg.locations import with_schema

            return with_schema(self.pg_url, f"chronobench_bench_{name}")
        return str(self.workdir / f"{name}.db")

    def drop_shared(self, name: str) -> None:
        if self.backend == "postgres":
            from chronomem.pg.locations import drop_schema

            drop_schema(self.pg_url, f"chronobench_bench_{name}")
        else:
            self.remove(name)


def default_trials(n: int) -> int:
    """Rollback trials per (mode, target): each is a fresh clone of the whole store, so
    one above 10,000 writes (a clone of 100,000 writes takes about a minute on a server)."""
    return 3 if n <= 10_000 else 1


def bench_size(
    n: int,
    embedder: Any,
    workdir: Path,
    trials: int | None = None,
    where: Location | None = None,
) -> dict[str, Any]:
    """Run the benchmark for one stream size; returns raw figures and prints a block.

    The first ``n - m`` writes are bulk-loaded with ``commit_many``; the last ``m``
    (up to 1,000) are committed one at a time and timed, so commit latency is
    measured on a store that already holds ~n writes.
    """
    where = where or Location("sqlite", workdir)
    trials = trials or default_trials(n)
    started = time.perf_counter()
    writes = synthetic_writes(n)
    mem = where.new(f"store-{n}", embedder)
    if not isinstance(embedder, HashEmbedder):  # warm model + cache so we time the store
        mem._encoder.embed_many(["warm up"])
    m = min(n, 1000)
    t0 = time.perf_counter()
    mem.commit_many("bench", "u", writes[: n - m])
    bulk = time.perf_counter() - t0
    commit_s = [
        _timed(lambda w=w: mem.commit("bench", "u", **w))
        for w in writes[n - m :]  # type: ignore[misc]
    ]
    size = where.size(mem, f"store-{n}")
    rng = random.Random(1)
    queries = [
        f"undo when {rng.choice(NAMES)} {rng.choice(VERBS)} {rng.choice(THINGS)}" for _ in range(30)
    ]
    cold = _timed(lambda: mem.resolve_hybrid("bench", "u", queries[0], 5))
    resolve_cpu: list[float] = []
    resolve_s = [_timed(lambda q=q: mem.resolve("bench", "u", q, 5), resolve_cpu) for q in queries]
    # the same requests again: the lexical index has read every term's postings by now
    again_cpu: list[float] = []
    again_s = [_timed(lambda q=q: mem.resolve("bench", "u", q, 5), again_cpu) for q in queries]
    out: dict[str, Any] = {
        "n": n,
        "commit": commit_s,
        "bytes_per_write": size / n,
        "resolve": resolve_s,
        "resolve_cold": cold,
        "resolve_again": again_s,
        "resolve_cpu": resolve_cpu,
        "resolve_again_cpu": again_cpu,
    }
    early, late = max(1, n // 10), max(1, n - n // 10)
    rows_written: dict[str, int] = {}
    compact_s: list[float] = []
    redact_s: list[float] = []
    for mode in ("truncate", "revert"):
        for name, target in (("early", early), ("late", late)):
            times = []
            for t in range(trials):
                clone = where.clone(mem, f"clone-{n}-{mode}-{name}-{t}")
                before = clone.conn.total_changes
                times.append(
                    _timed(
                        lambda c=clone, tg=target, md=mode: c.rollback_to_version(
                            "bench", "u", tg, mode=md
                        )
                    )
                )
                rows_written[f"{mode}_{name}"] = clone.conn.total_changes - before
                if t == 0:
                    assert clone.check_integrity("bench", "u") == [], "rollback broke the store"
                    if (mode, name) == ("truncate", "early"):
                        compact_s.append(_timed(lambda c=clone: c.compact("bench", "u")))
                        assert clone.check_integrity("bench", "u") == [], "compact broke it"
                if (mode, name) == ("revert", "late"):
                    # the whole history is still there: erasure rewrites (PostgreSQL) or
                    # zeroes (SQLite) what held one item of the middle of HEAD's state
                    alive = sorted(clone.snapshot("bench", "u"))
                    item = alive[len(alive) // 2]
                    redact_s.append(
                        _timed(lambda c=clone, i=item: c.redact("bench", "u", i, reason="bench"))
                    )
                    if t == 0:
                        assert clone.check_integrity("bench", "u") == [], "redact broke it"
                clone.close()
                where.remove(f"clone-{n}-{mode}-{name}-{t}")
            out[f"{mode}_{name}"] = times
    out["compact"] = compact_s
    out["redact"] = redact_s
    snap_early = _timed(lambda: mem.snapshot("bench", "u", early))
    snap_late = _timed(lambda: mem.snapshot("bench", "u", late))
    items = len(mem.snapshot("bench", "u"))
    mem.close()
    print(
        f"\n== {where.backend}: {n} writes ({type(embedder).__name__}), {items} items in S(HEAD) =="
    )
    print(
        f"bulk load (commit_many) {1000 * bulk / max(1, n - m):7.2f} ms per write ({n - m} writes)"
    )
    print(f"commit (last {m} writes) {_ms(commit_s)}")
    print(f"rollbacks: {trials} trial(s) per mode and target, each on a fresh clone")
    for mode in ("truncate", "revert"):
        for name, target in (("early", early), ("late", late)):
            follow = n - target
            print(
                f"rollback {mode:8s} to v{target:<6d} ({follow:6d} versions after) "
                f"{_ms(out[f'{mode}_{name}'])}   rows written {rows_written[f'{mode}_{name}']}"
            )
    ratio = statistics.median(out["truncate_early"]) / statistics.median(out["truncate_late"])
    print(f"truncate early / late  {ratio:.2f}x")
    print(f"compact after truncate to v{early}: {1000 * compact_s[0]:.0f} ms")
    print(f"redact one item by id (after revert late) {_ms(redact_s)}")
    print(
        f"read S(v) manifest    early v{early}: {1000 * snap_early:.2f} ms   "
        f"late v{late}: {1000 * snap_late:.2f} ms"
    )
    print(
        f"resolve (no reranker) {_ms(resolve_s)}   CPU median "
        f"{1000 * statistics.median(resolve_cpu):.2f} ms   (first call, loads matrix and "
        f"lexical index: {1000 * cold:.1f} ms)"
    )
    print(
        f"resolve, same requests again {_ms(again_s)}   CPU median "
        f"{1000 * statistics.median(again_cpu):.2f} ms"
    )
    print(f"bytes on disk         {size / n:,.0f} per write ({size / 1e6:.1f} MB total)")
    where.remove(f"store-{n}")
    out["wall"] = time.perf_counter() - started
    print(f"this size took {out['wall']:.0f} s in all (bulk load {bulk:.0f} s)")
    return out


def summary_table(results: list[dict[str, Any]]) -> str:
    """A markdown table of median latencies (ms), p95 commit and bytes per write."""

    def med(xs: list[float]) -> str:
        return f"{1000 * statistics.median(xs):.2f}"

    def opt(xs: list[float] | None) -> str:  # absent from runs saved before it was timed
        return med(xs) if xs else "-"

    def p95(xs: list[float]) -> str:
        vals = sorted(xs)
        return f"{1000 * vals[min(len(vals) - 1, int(round(0.95 * (len(vals) - 1))))]:.2f}"

    lines = [
        "| backend | embedder | writes | commit p50 | commit p95 | resolve | truncate early "
        "| truncate late | early/late | revert early | revert late | compact | redact | bytes/write |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        ratio = statistics.median(r["truncate_early"]) / statistics.median(r["truncate_late"])
        lines.append(
            f"| {r.get('backend', 'sqlite')} | {r['embedder']} | {r['n']:,} | {med(r['commit'])} "
            f"| {p95(r['commit'])} | {med(r['resolve'])} | {med(r['truncate_early'])} "
            f"| {med(r['truncate_late'])} | {ratio:.2f}x | {med(r['revert_early'])} "
            f"| {med(r['revert_late'])} | {med(r['compact'])} | {opt(r.get('redact'))} "
            f"| {r['bytes_per_write']:,.0f} |"
        )
    return "\n".join(lines)


RATIO_COLUMNS = (
    ("commit p50", "commit"), ("resolve", "resolve"), ("truncate late", "truncate_late"),
    ("revert early", "revert_early"), ("revert late", "revert_late"), ("compact", "compact"),
    ("redact", "redact"),
)  # fmt: skip


def ratio_table(results: list[dict[str, Any]]) -> str:
    """PostgreSQL's median over each SQLite row's, per size and operation (measured in
    the same run, so the load on the machine is shared); empty without both."""
    pg = {(r["embedder"], r["n"]): r for r in results if r["backend"] == "postgres"}
    rows = [
        (r, pg[(r["embedder"], r["n"])])
        for r in results
        if r["backend"] != "postgres" and (r["embedder"], r["n"]) in pg
    ]
    if not rows:
        return ""
    head = " | ".join(label for label, _ in RATIO_COLUMNS)
    lines = [
        f"| postgres / | writes | {head} |",
        "|---|---:|" + "---:|" * len(RATIO_COLUMNS),
    ]
    for base, other in rows:
        cells = " | ".join(
            f"{statistics.median(other[key]) / statistics.median(base[key]):.2f}x"
            if other.get(key) and base.get(key)
            else "-"
            for _, key in RATIO_COLUMNS
        )
        lines.append(f"| {base['backend']} | {base['n']:,} | {cells} |")
    return "\n".join(lines)


def throughput_table(rows: list[dict[str, Any]]) -> str:
    """A markdown table of commits per second by backend and number of writers."""
    counts = sorted({r["writers"] for r in rows})
    lines = [
        "| backend | " + " | ".join(f"{w} writer{'s' if w > 1 else ''}" for w in counts) + " |",
        "|---|" + "---:|" * len(counts),
    ]
    for backend in dict.fromkeys(r["backend"] for r in rows):
        cells = {r["writers"]: r["per_s"] for r in rows if r["backend"] == backend}
        lines.append(
            f"| {backend} | "
            + " | ".join(f"{cells.get(w, float('nan')):,.0f}/s" for w in counts)
            + " |"
        )
    return "\n".join(lines)


def run(
    sizes: list[int],
    embedders: list[str],
    backends: tuple[str, ...] = ("sqlite",),
    pg_url: str | None = None,
    writers: tuple[int, ...] = (1, 4, 16),
    commits_per_writer: int = 100,
    trials: int | None = None,
    save: Path | None = None,
) -> list[dict[str, Any]]:
    """Benchmark every (backend, embedder, size), then concurrent-writer throughput;
    ``save``: also write the raw figures there as JSON (:func:`report_saved` prints
    several such files as one set of tables)."""
    from chronobench.bench.concurrency import ServerProbe, bound_line, throughput

    results: list[dict[str, Any]] = []
    rates: list[dict[str, Any]] = []
    durability: dict[str, str] = {}
    cluster = None

    def keep() -> None:
        """Save the figures so far (a run stopped midway keeps its finished blocks)."""
        if save is not None:
            from chronobench.fileio import atomic_write_json

            atomic_write_json(save, {"durability": durability, "results": results, "rates": rates})

    try:
        if "postgres" in backends and not pg_url:
            from chronomem.pg.cluster import Cluster

            cluster = Cluster().start()
            pg_url = cluster.url
            print(f"PostgreSQL: a throwaway local cluster at {pg_url}")
        with tempfile.TemporaryDirectory(prefix="chronomem-bench-") as tmp:
            for backend in backends:
                where = Location(backend, Path(tmp), pg_url)
                durability[backend] = where.durability()
                print(f"\n{backend} durability: {durability[backend]}")
                for name in embedders:
                    embedder = HashEmbedder() if name == "hash" else resolve_embedder(name)
                    for n in sizes:
                        out = bench_size(n, embedder, Path(tmp), trials, where=where)
                        results.append({"backend": backend, "embedder": name, **out})
                        keep()
                probe = ServerProbe(pg_url) if backend == "postgres" and pg_url else None
                for w in writers:
                    loc = where.shared(f"conc{w}")
                    try:
                        rate = throughput(loc, w, commits_per_writer, where.pragma, probe)
                    finally:
                        where.drop_shared(f"conc{w}")
                    rates.append({"backend": backend, **rate})
                    keep()
                    print(
                        f"{backend}: {w:2d} concurrent writers (own scopes) "
                        f"{rate['per_s']:8.0f} commits/s ({rate['commits']:.0f} in "
                        f"{rate['seconds']:.1f} s)\n    {bound_line(rate)}"
                    )
    finally:
        if cluster is not None:
            cluster.stop()
    report(durability, results, rates)
    return results


def report(
    durability: dict[str, str],
    results: list[dict[str, Any]],
    rates: list[dict[str, Any]],
    runs: str = "same run",
) -> None:
    """The closing tables: durability, median ms per operation, PostgreSQL over SQLite,
    commits per second (with what bounded each run)."""
    from chronobench.bench.concurrency import bound_line

    print("\ndurability of a returned commit:\n")
    for backend, what in durability.items():
        print(f"- {backend}: {what}")
    if results:
        print("\nmedian ms per operation (commit p50/p95, resolve, rollbacks, compact):\n")
        print(summary_table(results))
    ratios = ratio_table(results)
    if ratios:
        print(f"\nPostgreSQL over SQLite, median over median ({runs}):\n")
        print(ratios)
    if rates:
        print("\nwrite throughput, hash embedder, one scope per writer process:\n")
        print(throughput_table(rates))
        print("\nwhat each commit cost (CPU per commit; on PostgreSQL also the WAL):\n")
        for r in rates:
            many = "s" if r["writers"] > 1 else ""
            print(f"- {r['backend']}, {r['writers']} writer{many}: {bound_line(r)}")


def report_saved(paths: list[str]) -> None:
    """Print the figures of several saved runs (``bench store --save``) as one set of
    tables (rows in the order given; ratios pair rows of the same size, whichever run
    they came from)."""
    durability: dict[str, str] = {}
    results: list[dict[str, Any]] = []
    rates: list[dict[str, Any]] = []
    for path in paths:
        figures = json.loads(Path(path).read_text())
        durability.update(figures["durability"])
        results += figures["results"]
        rates += figures["rates"]
    runs = "same run" if len(paths) == 1 else f"{len(paths)} runs, one after the other"
    report(durability, results, rates, runs)
