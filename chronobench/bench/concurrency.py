"""Write throughput with concurrent writer processes (part of ``bench store``).

Each writer is a process with its own store connection committing to its own scope
(one (app, user) pair per writer), all started together. SQLite has one writer per
file, so its writers queue on the file lock; on PostgreSQL writers of different
scopes lock different rows and run side by side, limited by CPU (the client's
descriptor building and the server's work share the machine) and by the WAL flush
of each commit.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import zlib
from typing import Any

from chronobench.bench.synthetic import synthetic_writes


def _writer(location: str, user: str, n: int, start: Any, out: Any, pragma: str | None) -> None:
    from chronomem import ChronoMem, HashEmbedder

    writes = synthetic_writes(n, seed=zlib.crc32(user.encode()) % 1000)
    with ChronoMem(location, embedder=HashEmbedder()) as mem:
        if pragma:  # a SQLite connection setting, e.g. its durability
            mem.conn.execute(pragma)
        mem.commit("bench-conc", user, **writes[0])  # connect and create the scope first
        start.wait()
        t0 = time.perf_counter()
        for w in writes[1:]:
            mem.commit("bench-conc", user, **w)
        out.put((t0, time.perf_counter(), n - 1))


def throughput(
    location: str, writers: int, n: int = 100, pragma: str | None = None
) -> dict[str, float]:
    """Commits per second of ``writers`` processes, ``n`` commits each, own scopes
    (``pragma``: a statement each writer's SQLite connection runs first)."""
    ctx = mp.get_context("fork")
    start = ctx.Barrier(writers + 1)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(location, f"w{i}-{writers}", n, start, out, pragma))
        for i in range(writers)
    ]
    for p in procs:
        p.start()
    start.wait()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        if p.exitcode != 0:
            raise RuntimeError(f"a benchmark writer exited with {p.exitcode}")
    first = min(r[0] for r in results)
    last = max(r[1] for r in results)
    total = sum(r[2] for r in results)
    return {
        "writers": writers,
        "commits": total,
        "seconds": last - first,
        "per_s": total / (last - first),
    }
