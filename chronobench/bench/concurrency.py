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
commit and the WAL's records, bytes and flushes per commit (``pg_stat_wal``). A
machine near 100% busy is CPU-bound; flushes per commit well under 1 mean commits share
WAL flushes (group commit).

The server's CPU is that of the writers' own backends only (their pids from
``pg_backend_pid()``), each read from ``/proc/PID/stat`` before and after the run while
its connection is still open. Summing the server's whole process tree instead gave
wrong, even negative, figures: backends of other connections come and go, a backend
that exits between two reads drops out of the sum, and a pid can be reused. Background
processes (WAL writer, checkpointer, autovacuum) are therefore not counted. A reading
that cannot be trusted (a pid not a child of the server, a backend restarted under the
same pid, a counter going backwards, ``/proc`` unreadable) gives "n/a" and the reason,
never a number.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import time
import zlib
from pathlib import Path
from typing import Any

from chronobench.bench.synthetic import synthetic_writes


def _writer(
    location: str,
    user: str,
    n: int,
    gates: tuple[Any, Any, Any],
    pids: Any,
    out: Any,
    pragma: str | None,
    probed: bool,
) -> None:
    from chronomem import ChronoMem, HashEmbedder

    ready, go, release = gates
    writes = synthetic_writes(n, seed=zlib.crc32(user.encode()) % 1000)
    with ChronoMem(location, embedder=HashEmbedder()) as mem:
        if pragma:  # a SQLite connection setting, e.g. its durability
            mem.conn.execute(pragma)
        mem.commit("bench-conc", user, **writes[0])  # connect and create the scope first
        pid = None
        if probed:  # a PostgreSQL store: the backend serving this connection
            pid = int(mem.conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        pids.put(pid)
        ready.wait()
        go.wait()
        t0, c0 = time.perf_counter(), time.process_time()
        for w in writes[1:]:
            mem.commit("bench-conc", user, **w)
        t1, c1 = time.perf_counter(), time.process_time()
        if probed:
            # A live backend hands its WAL counts to pg_stat_wal only now and then (or at
            # exit); this makes it do so before the probe's second reading.
            # (PostgreSQL before 15 lacks it: the WAL figure may then fall short)
            with contextlib.suppress(Exception):
                mem.conn.execute("SELECT pg_stat_force_next_flush()").fetchone()
        out.put((t0, t1, n - 1, c1 - c0))
        # the backend must outlive the probe's second reading of its CPU
        release.wait(timeout=600)


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores since boot, from ``/proc/stat``."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def proc_stat(pid: int, proc: Path = Path("/proc")) -> tuple[int, int, int]:
    """(parent pid, start time, utime + stime) of process ``pid``, from its ``stat``
    file; start time and CPU in clock ticks."""
    text = (proc / str(pid) / "stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) ", which may hold spaces
    return int(fields[1]), int(fields[19]), int(fields[11]) + int(fields[12])


Snapshot = dict[int, tuple[int, int]]  # backend pid -> (start time, CPU ticks)


def snapshot(pids: list[int], server: int, proc: Path = Path("/proc")) -> Snapshot | str:
    """Start time and CPU ticks of each backend in ``pids``, or why they cannot be
    trusted: a pid unreadable, or not a child of the server's postmaster ``server``
    (a server on another machine has its pids mean other processes here)."""
    got: Snapshot = {}
    for pid in pids:
        try:
            parent, started, ticks = proc_stat(pid, proc)
        except (OSError, ValueError, IndexError) as exc:
            return f"backend {pid}: {proc / str(pid) / 'stat'} unreadable ({type(exc).__name__})"
        if parent != server:
            return f"pid {pid} is not a backend of the server (parent {parent}, not {server})"
        got[pid] = (started, ticks)
    return got


def backend_cpu_ticks(before: Snapshot | str, after: Snapshot | str) -> int | str:
    """CPU ticks the backends spent between two snapshots, or why that figure cannot
    be trusted (a snapshot failed, the backends differ, one restarted under the same
    pid, a counter went backwards)."""
    for reading in (before, after):
        if isinstance(reading, str):
            return reading
    assert isinstance(before, dict) and isinstance(after, dict)
    if not before:
        return "no backend pids"
    if before.keys() != after.keys():
        return "the backends differ between the two readings"
    total = 0
    for pid, (started, ticks) in before.items():
        started1, ticks1 = after[pid]
        if started1 != started:
            return f"pid {pid} is a different process in the second reading (reused pid)"
        if ticks1 < ticks:
            return f"backend {pid}'s CPU went backwards ({ticks} -> {ticks1} ticks)"
        total += ticks1 - ticks
    return total


class ServerProbe:
    """CPU and WAL counters of a PostgreSQL server, read before and after a run. CPU
    needs the server on this machine and readable (its data directory's
    ``postmaster.pid``); without, only the WAL figures are given."""

    def __init__(self, url: str, proc: Path = Path("/proc")) -> None:
        self.url = url
        self.proc = proc
        self.postmaster: int | None = None
        try:
            datadir = self._query("SHOW data_directory")[0]
            pid = int(Path(datadir, "postmaster.pid").read_text().split("\n", 1)[0])
            proc_stat(pid, proc)
            self.postmaster = pid
        except Exception:  # not local, not readable, or not a superuser: no CPU figure
            self.postmaster = None

    def _query(self, sql: str) -> tuple[Any, ...]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return tuple(conn.execute(sql).fetchone())

    def read(self) -> dict[str, float]:
        """The WAL counters now (none where this server has no ``pg_stat_wal``)."""
        names = ("wal_records", "wal_bytes", "wal_syncs", "wal_writes")
        try:  # pg_stat_wal: PostgreSQL 14 and later
            row = self._query("SELECT wal_records, wal_bytes, wal_sync, wal_write FROM pg_stat_wal")
            return {name: float(x) for name, x in zip(names, row, strict=True)}
        except Exception:
            return {}

    def backends(self, pids: list[int | None]) -> Snapshot | str | None:
        """A CPU snapshot of the given backends (None: no CPU figure on this server)."""
        if self.postmaster is None:
            return None
        if any(pid is None for pid in pids):
            return "a writer did not report its backend pid"
        return snapshot([pid for pid in pids if pid is not None], self.postmaster, self.proc)


def throughput(
    location: str,
    writers: int,
    n: int = 100,
    pragma: str | None = None,
    probe: ServerProbe | None = None,
) -> dict[str, Any]:
    """Commits per second of ``writers`` processes, ``n`` commits each, own scopes
    (``pragma``: a statement each writer's SQLite connection runs first), with what
    each commit cost (client CPU; server CPU and WAL with a ``probe``) and how busy the
    machine's cores were."""
    ctx = mp.get_context("fork")
    ready, go, release = ctx.Barrier(writers + 1), ctx.Barrier(writers + 1), ctx.Event()
    pids, out = ctx.Queue(), ctx.Queue()
    procs = [
        ctx.Process(
            target=_writer,
            args=(
                location,
                f"w{i}-{writers}",
                n,
                (ready, go, release),
                pids,
                out,
                pragma,
                probe is not None,
            ),
        )
        for i in range(writers)
    ]
    for p in procs:
        p.start()
    try:
        ready.wait(timeout=600)
        backend_pids = [pids.get(timeout=600) for _ in procs]
        before = probe.read() if probe else {}
        cpu0 = probe.backends(backend_pids) if probe else None
        busy0, total0 = _machine_ticks()
        go.wait(timeout=600)
        results = [out.get(timeout=600) for _ in procs]
        busy1, total1 = _machine_ticks()
        cpu1 = probe.backends(backend_pids) if probe else None
        after = probe.read() if probe else {}
    finally:
        release.set()  # the writers close their connections only now
    for p in procs:
        p.join(timeout=60)
        if p.exitcode != 0:
            raise RuntimeError(f"a benchmark writer exited with {p.exitcode}")
    first = min(r[0] for r in results)
    last = max(r[1] for r in results)
    total = sum(r[2] for r in results)
    rate: dict[str, Any] = {
        "writers": writers,
        "commits": total,
        "seconds": last - first,
        "per_s": total / (last - first),
        "client_cpu_ms": 1000 * sum(r[3] for r in results) / total,
        "machine_busy": (busy1 - busy0) / max(1, total1 - total0),
    }
    for key in after.keys() & before.keys():  # the probe's own connections count: tiny
        rate[key] = (after[key] - before[key]) / total
    if cpu0 is not None and cpu1 is not None:
        ticks = backend_cpu_ticks(cpu0, cpu1)
        if isinstance(ticks, str):
            rate["server_cpu_na"] = ticks
        else:
            rate["server_cpu_ms"] = 1000 * ticks / os.sysconf("SC_CLK_TCK") / total
    return rate


def bound_line(rate: dict[str, Any]) -> str:
    """One line of what a throughput run cost per commit."""
    parts = [
        f"client CPU {rate['client_cpu_ms']:.2f} ms/commit",
        f"cores busy {100 * rate['machine_busy']:.0f}%",
    ]
    if "server_cpu_ms" in rate:
        parts.append(f"server CPU {rate['server_cpu_ms']:.2f} ms/commit")
    elif "server_cpu_na" in rate:
        parts.append(f"server CPU n/a ({rate['server_cpu_na']})")
    if "wal_syncs" in rate:
        parts.append(
            f"WAL {rate['wal_records']:.0f} records, {rate['wal_bytes'] / 1000:.1f} kB, "
            f"{rate['wal_syncs']:.2f} flushes per commit "
            f"({rate['wal_syncs'] * rate['per_s']:.0f} flushes/s)"
        )
    return "; ".join(parts)
