"""Wall time, CPU time and peak memory of a run, per phase and per cell (``run --profile``).

A phase (composing the cells, building the datasets, embedding, the cells, the
leaderboard) is timed in the parent; the work it hands to worker processes reports its
own CPU time and peak resident memory back with its result (:func:`measured`), since a
parent cannot read a live child's CPU time portably. So a phase's ``cpu`` is this
process's plus its workers' tasks'; what workers spend outside any task (interpreter
start, imports, waiting) shows only in the whole job's line, which reads the operating
system's totals for this process and every child it has reaped.

Peak RSS of a cell is its worker's high-water mark during the cell where Linux lets a
process reset that mark (``/proc/self/clear_refs``), else the worker's peak so far. The
job's peak is the largest single process's, as ``/usr/bin/time`` reports it (workers run
side by side, so the machine's total can be up to ``jobs`` times that).

Always on and cheap (a few system calls per phase and cell); ``run --profile`` prints it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


def _cpu_self() -> float:
    """User + system seconds of this process, every thread."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _cpu_children() -> float:
    """User + system seconds of this process's reaped children."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _maxrss_mb(who: int) -> float:
    import resource

    kb = resource.getrusage(who).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return kb / 1024 / 1024 if sys.platform == "darwin" else kb / 1024


def _reset_peak() -> bool:
    """Restart this process's resident high-water mark (Linux >= 4.0); whether it could."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_mb() -> float:
    """This process's resident high-water mark in MiB (since the last reset on Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return _maxrss_mb(resource.RUSAGE_SELF)


def measured(fn: Callable[..., Any], *args: Any) -> tuple[Any, dict[str, float]]:
    """Run ``fn(*args)`` (in a worker) and return ``(its result, usage)``: wall and CPU
    seconds and the peak resident MiB of the process while it ran."""
    _reset_peak()
    t0, c0 = time.perf_counter(), _cpu_self()
    result = fn(*args)
    return result, {
        "wall": time.perf_counter() - t0,
        "cpu": _cpu_self() - c0,
        "rss_mb": _peak_mb(),
    }


@dataclass
class Row:
    """One phase or cell: wall and CPU seconds, peak resident MiB."""

    name: str
    wall: float = 0.0
    cpu: float = 0.0
    rss_mb: float = 0.0
    note: str = ""


@dataclass
class Usage:
    """What :func:`phase` and :func:`cell` recorded since :func:`start`."""

    t0: float = field(default_factory=time.perf_counter)
    cpu0: float = field(default_factory=lambda: _cpu_self() + _cpu_children())
    phases: list[Row] = field(default_factory=list)
    cells: list[Row] = field(default_factory=list)
    _open: list[Row] = field(default_factory=list)

    def worker(self, usage: dict[str, float]) -> None:
        """Charge a worker task's CPU and peak to the phases open now."""
        for row in self._open:
            row.cpu += usage.get("cpu", 0.0)
            row.rss_mb = max(row.rss_mb, usage.get("rss_mb", 0.0))


_CURRENT = Usage()


def start() -> Usage:
    """Forget what was recorded; the whole job is timed from now."""
    global _CURRENT
    _CURRENT = Usage()
    return _CURRENT


def current() -> Usage:
    return _CURRENT


@contextlib.contextmanager
def phase(name: str) -> Iterator[Row]:
    """Time a phase of the run here (workers add theirs through :meth:`Usage.worker`)."""
    rec = _CURRENT
    row = Row(name)
    rec._open.append(row)
    # This process alone: the pool's workers are reaped when it shuts down, so their
    # whole lives would land in whichever phase that is; their tasks report instead.
    t0, c0 = time.perf_counter(), _cpu_self()
    try:
        yield row
    finally:
        row.wall += time.perf_counter() - t0
        row.cpu += _cpu_self() - c0
        row.rss_mb = max(row.rss_mb, _peak_mb())
        rec._open.remove(row)
        rec.phases.append(row)


def cell(name: str, usage: dict[str, float], note: str = "") -> None:
    """Record a cell that ran elsewhere (a worker) with its own ``usage``."""
    _CURRENT.cells.append(
        Row(name, usage.get("wall", 0.0), usage.get("cpu", 0.0), usage.get("rss_mb", 0.0), note)
    )


def cpus() -> int:
    """CPUs this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def report(rec: Usage | None = None) -> str:
    """The table: phases, cells, then the whole job (with CPU / (CPUs x wall))."""
    import resource

    rec = rec or _CURRENT
    wall = time.perf_counter() - rec.t0
    cpu = _cpu_self() + _cpu_children() - rec.cpu0
    peak = max(_maxrss_mb(resource.RUSAGE_SELF), _maxrss_mb(resource.RUSAGE_CHILDREN))
    rows = [*rec.phases, *rec.cells]
    width = max([24, *(len(r.name) for r in rows)])
    head = f"{'':<{width}} {'wall s':>8} {'cpu s':>8} {'cpu/wall':>8} {'peak MiB':>9}"

    def line(r: Row) -> str:
        ratio = r.cpu / r.wall if r.wall > 0 else 0.0
        note = f"  {r.note}" if r.note else ""
        return f"{r.name:<{width}} {r.wall:8.1f} {r.cpu:8.1f} {ratio:8.2f} {r.rss_mb:9.0f}{note}"

    out = ["profile: wall, CPU (user+system, this process and its workers' tasks), peak RSS"]
    out += ["phase" + head[5:], *(line(r) for r in rec.phases)]
    if rec.cells:
        out += ["", "cell" + head[4:], *(line(r) for r in rec.cells)]
    n = cpus()
    share = cpu / (n * wall) if wall > 0 else 0.0
    out += [
        "",
        f"whole job: {wall:.1f} s wall, {cpu:.1f} s CPU, CPU/({n} x wall) {share:.2f}, "
        f"peak RSS {peak:.0f} MiB (largest single process); load average {_load()}",
    ]
    return "\n".join(out)
