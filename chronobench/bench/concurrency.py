"""Write throughput with concurrent writer processes (part of ``bench store``).

Each writer is a process with its own store connection committing to its own scope
(one (app, user) pair per writer), all started together. SQLite has one writer per
file, so its writers queue on the file lock; on PostgreSQL writers of different
scopes lock different rows and run side by side, limited by CPU (the client's
descriptor building and the server's work share the machine) and by the WAL flush
of each commit.

Besides commits per second, each run says what bounded it: the writers' own CPU per
commit (``time.process_time`` in each process), the machine's busy share of its cores
over the run (``/proc/stat``), and on a local PostgreSQL server the server's CPU per
commit (its postmaster and every child, exited backends included, from ``/proc``) and
the WAL's records, bytes and flushes per commit (``pg_stat_wal``). A machine near 100%
busy is CPU-bound; flushes per commit well under 1 mean commits share WAL flushes
(group commit).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import zlib
from pathlib import Path
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
        t0, c0 = time.perf_counter(), time.process_time()
        for w in writes[1:]:
            mem.commit("bench-conc", user, **w)
        out.put((t0, time.perf_counter(), n - 1, time.process_time() - c0))


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores since boot, from ``/proc/stat``."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def _tree_ticks(root: int) -> int:
    """CPU ticks of process ``root`` (with its reaped children) and its live children."""

    def stat(pid: int | str) -> list[str]:
        text = Path(f"/proc/{pid}/stat").read_text()
        return text[text.rindex(")") + 2 :].split()  # after "pid (comm) "

    own = stat(root)
    ticks = sum(int(x) for x in own[11:15])  # utime stime cutime cstime
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = stat(entry.name)
            except (OSError, ValueError):
                continue  # gone meanwhile
            if fields[1] == str(root):
                ticks += int(fields[11]) + int(fields[12])
    return ticks


class ServerProbe:
    """CPU and WAL counters of a PostgreSQL server, read before and after a run. CPU
    needs the server on this machine and readable (its data directory's
    ``postmaster.pid``); without, only the WAL figures are given."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.postmaster: int | None = None
        try:
            datadir = self._query("SHOW data_directory")[0]
            pid = int(Path(datadir, "postmaster.pid").read_text().split("\n", 1)[0])
            _tree_ticks(pid)
            self.postmaster = pid
        except Exception:  # not local, not readable, or not a superuser: no CPU figure
            self.postmaster = None

    def _query(self, sql: str) -> tuple[Any, ...]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return tuple(conn.execute(sql).fetchone())

    def read(self) -> dict[str, float]:
        """The counters now (what this server lets us read: none, WAL, WAL and CPU)."""
        names = ("wal_records", "wal_bytes", "wal_syncs", "wal_writes")
        try:  # pg_stat_wal: PostgreSQL 14 and later
            row = self._query("SELECT wal_records, wal_bytes, wal_sync, wal_write FROM pg_stat_wal")
            got = {name: float(x) for name, x in zip(names, row, strict=True)}
        except Exception:
            got = {}
        if self.postmaster is not None:
            got["server_cpu_s"] = _tree_ticks(self.postmaster) / os.sysconf("SC_CLK_TCK")
        return got


def throughput(
    location: str,
    writers: int,
    n: int = 100,
    pragma: str | None = None,
    probe: ServerProbe | None = None,
) -> dict[str, float]:
    """Commits per second of ``writers`` processes, ``n`` commits each, own scopes
    (``pragma``: a statement each writer's SQLite connection runs first), with what
    each commit cost (client CPU; server CPU and WAL with a ``probe``) and how busy the
    machine's cores were."""
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
    before = probe.read() if probe else {}
    busy0, total0 = _machine_ticks()
    results = [out.get(timeout=600) for _ in procs]
    busy1, total1 = _machine_ticks()
    after = probe.read() if probe else {}
    for p in procs:
        p.join(timeout=60)
        if p.exitcode != 0:
            raise RuntimeError(f"a benchmark writer exited with {p.exitcode}")
    first = min(r[0] for r in results)
    last = max(r[1] for r in results)
    total = sum(r[2] for r in results)
    rate: dict[str, float] = {
        "writers": writers,
        "commits": total,
        "seconds": last - first,
        "per_s": total / (last - first),
        "client_cpu_ms": 1000 * sum(r[3] for r in results) / total,
        "machine_busy": (busy1 - busy0) / max(1, total1 - total0),
    }
    for key in after.keys() & before.keys():  # the probe's own connections count: tiny
        delta = (after[key] - before[key]) / total
        rate[key if key != "server_cpu_s" else "server_cpu_ms"] = (
            1000 * delta if key == "server_cpu_s" else delta
        )
    return rate


def bound_line(rate: dict[str, float]) -> str:
    """One line of what a throughput run cost per commit."""
    parts = [
        f"client CPU {rate['client_cpu_ms']:.2f} ms/commit",
        f"cores busy {100 * rate['machine_busy']:.0f}%",
    ]
    if "server_cpu_ms" in rate:
        parts.append(f"server CPU {rate['server_cpu_ms']:.2f} ms/commit")
    if "wal_syncs" in rate:
        parts.append(
            f"WAL {rate['wal_records']:.0f} records, {rate['wal_bytes'] / 1000:.1f} kB, "
            f"{rate['wal_syncs']:.2f} flushes per commit "
            f"({rate['wal_syncs'] * rate['per_s']:.0f} flushes/s)"
        )
    return "; ".join(parts)
