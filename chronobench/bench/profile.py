"""``python -m chronobench bench main``: where the main job's time goes, per cell.

Runs an experiment (default: the main job, ``experiment=default``) in this process with
results in a temporary folder (the real ``results/`` and leaderboard are not touched)
and times each cell by stage. Stage timers wrap the functions that do the work and
count *exclusive* time (a resolve that embeds its query charges the embedding to
``embed``), so a row's stages add up to its total; ``other`` is the rest (prompt
building, sample rows, I/O). ``cpu`` is the process's CPU time in the cell, a figure
that a busy machine disturbs less than wall time.

Stages: ``data`` dataset build/load; ``ingest`` committing streams into stores;
``embed`` the embedding model itself (and its loading); ``resolve`` retrieval,
resolution, search and rollback in the store; ``rerank`` the reranker's own work;
``generate`` backbone calls behind the call cache; ``score`` metrics.

By default the caches and the built data start empty (temporary folders: a cold run,
what a fresh clone pays); ``--warm`` uses the configured folders, as a rerun would.

``--before OVERRIDE...`` (default ``embedder.runtime=onnx_int8``) also times the experiment
with those overrides, and prints both tables and the after/before ratio per stage. The
two sides run one after the other, each in a fresh process (no imports, no in-memory
cache or memoised function carried over), so the ratio compares like with like; on a
shared machine, read it beside the load averages printed with it. ``--before`` with no
override times the configured experiment alone.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_INHERITED = object()  # restore marker: the class had no attribute of its own
STAGES = ("data", "ingest", "embed", "resolve", "rerank", "generate", "score")

# (module, attribute path, stage). A class attribute is patched on the class; a function
# is replaced wherever a loaded chronobench module bound it by name.
TARGETS: tuple[tuple[str, str, str], ...] = (
    ("chronobench.runner.components", "Components.load_data", "data"),
    ("chronobench.systems.stores", "StoreProvider._ingest", "ingest"),
    ("chronomem", "ChronoMem.commit_many", "ingest"),
    ("chronomem", "ChronoMem.commit", "ingest"),
    ("chronomem.embedders", "SentenceTransformerEmbedder.encode", "embed"),
    ("chronomem.embedders", "SentenceTransformerEmbedder._load", "embed"),
    ("chronomem.embedders", "HashEmbedder.encode", "embed"),
    ("chronomem.onnx_embedder", "OnnxEmbedder.encode", "embed"),
    ("chronomem.onnx_embedder", "OnnxEmbedder._load", "embed"),
    ("chronomem", "ChronoMem.resolve", "resolve"),
    ("chronomem", "ChronoMem.resolve_lexical", "resolve"),
    ("chronomem", "ChronoMem.resolve_dense", "resolve"),
    ("chronomem", "ChronoMem.resolve_hybrid", "resolve"),
    ("chronomem", "ChronoMem.search", "resolve"),
    ("chronomem", "ChronoMem.clone", "resolve"),
    ("chronomem", "ChronoMem.rollback_to_version", "resolve"),
    ("chronomem", "ChronoMem.rollback_to_version_by_nl_query", "resolve"),
    ("chronomem", "ChronoMem.plan_rollback_by_nl_query", "resolve"),
    ("chronomem", "DeltaReranker.rerank", "rerank"),
    ("chronomem", "CrossEncoderReranker.rerank", "rerank"),
    ("chronobench.backbones.cache", "CachedBackbone.generate", "generate"),
    ("chronobench.metrics", "score_probe", "score"),
    ("chronobench.metrics", "score_selection", "score"),
    ("chronobench.runner.metrics_io", "compute_metrics", "score"),
)


class StageClock:
    """Exclusive time per stage for the current cell (single-threaded use)."""

    def __init__(self) -> None:
        self.cells: list[dict[str, Any]] = []
        self._stack: list[list[Any]] = []  # [stage, time spent in nested stages]
        self._current: dict[str, Any] | None = None

    def start_cell(self, label: str) -> None:
        """Open a new row; following stage time is charged to it."""
        self._current = {
            "cell": label,
            **dict.fromkeys(STAGES, 0.0),
            "t0": time.perf_counter(),
            "cpu0": time.process_time(),
        }
        self._stack = []

    def end_cell(self) -> dict[str, Any]:
        """Close the row; ``total`` is wall time, ``other`` what no stage covered."""
        row = self._current
        assert row is not None, "end_cell without start_cell"
        row["total"] = time.perf_counter() - row.pop("t0")
        # CPU seconds of this process (all threads): steadier than wall time on a busy
        # machine; the embedding model uses several threads, so it can exceed wall time.
        row["cpu"] = time.process_time() - row.pop("cpu0")
        row["other"] = max(0.0, row["total"] - sum(row[s] for s in STAGES))
        self.cells.append(row)
        self._current = None
        return row

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` with its exclusive time charged to ``stage``."""

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._current is None:
                return fn(*args, **kwargs)
            self._stack.append([stage, 0.0])
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - t0
                _, nested = self._stack.pop()
                if self._current is not None:
                    self._current[stage] += elapsed - nested
                if self._stack:
                    self._stack[-1][1] += elapsed

        return timed


def _resolve(module: str, path: str) -> tuple[Any, str, Any] | None:
    """(owner, attribute, current value) of ``module:path``, or None if it is absent."""
    try:
        owner: Any = importlib.import_module(module)
    except ImportError:
        return None
    *parents, attr = path.split(".")
    for name in parents:
        owner = getattr(owner, name, None)
        if owner is None:
            return None
    value = getattr(owner, attr, None)
    return (owner, attr, value) if value is not None else None


@contextmanager
def instrumented(clock: StageClock) -> Iterator[list[str]]:
    """Patch every target with ``clock``'s timers; yields the targets it could not find
    (so a report says what it did not cover) and restores everything on exit."""
    restore: list[tuple[Any, str, Any]] = []
    missing: list[str] = []
    try:
        for module, path, stage in TARGETS:
            found = _resolve(module, path)
            if found is None:
                missing.append(f"{module}:{path}")
                continue
            owner, attr, value = found
            timed = clock.wrap(stage, value)
            if isinstance(owner, type):
                # An inherited method is shadowed on the class, and the shadow removed after.
                own = attr in owner.__dict__
                restore.append((owner, attr, owner.__dict__[attr] if own else _INHERITED))
                setattr(owner, attr, timed)
                continue
            loaded = [m for n, m in list(sys.modules.items()) if n.startswith("chronobench") and m]
            for mod in {id(m): m for m in [owner, *loaded]}.values():
                for name, bound in list(vars(mod).items()):
                    if bound is value:
                        restore.append((mod, name, value))
                        setattr(mod, name, timed)
        yield missing
    finally:
        for owner, attr, value in reversed(restore):
            if value is _INHERITED:
                delattr(owner, attr)
            else:
                setattr(owner, attr, value)


def _untimed_row(stats: dict[str, Any]) -> dict[str, Any]:
    """A table row of a cell that ran in a worker: its wall seconds, as ``other``."""
    row: dict[str, Any] = dict.fromkeys((*STAGES, "cpu"), 0.0)
    row.update(cell=str(stats.get("cell", "?")), other=float(stats.get("seconds", 0.0)))
    row["total"] = row["other"]
    return row


def format_table(rows: list[dict[str, Any]]) -> str:
    """Seconds per stage per cell, with a total row and each stage's share."""
    cols = [*STAGES, "other", "total", "cpu"]
    width = max([len("cell"), *(len(r["cell"]) for r in rows)]) if rows else 4
    lines = [f"{'cell':<{width}} " + " ".join(f"{c:>8}" for c in cols)]
    for r in rows:
        lines.append(f"{r['cell']:<{width}} " + " ".join(f"{r[c]:8.1f}" for c in cols))
    if rows:
        total = {c: sum(r[c] for r in rows) for c in cols}
        lines.append(f"{'all cells':<{width}} " + " ".join(f"{total[c]:8.1f}" for c in cols))
        whole = total["total"] or 1.0
        lines.append(
            f"{'share %':<{width}} " + " ".join(f"{100 * total[c] / whole:8.1f}" for c in cols[:-1])
        )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``bench main``."""
    parser.add_argument(
        "--experiment", default="default", help="experiment to time (default: the main job)"
    )
    parser.add_argument(
        "--limit-streams", type=int, default=None, help="first N streams per dataset (quicker)"
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="use the configured cache and data folders (a rerun) instead of empty ones (cold)",
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="use this cache folder (fill it once, then time a warm rerun against it)",
    )
    parser.add_argument(
        "--before",
        nargs="*",
        default=list(DEFAULT_BEFORE),
        metavar="OVERRIDE",
        help="also time the experiment with these overrides and print after/before ratios "
        f"(default: {' '.join(DEFAULT_BEFORE)}; no value: time the experiment alone)",
    )
    parser.add_argument(
        "--keep",
        default=None,
        metavar="DIR",
        help="keep each side's results folder as DIR/before and DIR/after (with --before "
        "and no value: the one run's as DIR/after; default: dropped)",
    )
    parser.add_argument("--json-out", default=None, help=argparse.SUPPRESS)  # child side
    parser.add_argument("--results-dir", default=None, help=argparse.SUPPRESS)  # child side
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides, key=value")


#: What ``bench main`` compares with by default: the int8 onnxruntime embedder (the
#: default before the reproducible torch_f64 one).
DEFAULT_BEFORE = ("embedder.runtime=onnx_int8",)


def main(args: argparse.Namespace) -> int:
    """Time the experiment (and, with ``--before``, the experiment with those overrides)."""
    if args.limit_streams is not None and args.limit_streams < 1:
        raise SystemExit("--limit-streams: at least 1")
    if args.json_out:
        return _time_here(args)
    if not args.before:
        if args.keep:  # one side: its results folder is kept as DIR/after
            after = os.path.join(os.path.abspath(args.keep), "after")
            if os.path.isdir(after) and os.listdir(after):
                raise SystemExit(f"--keep: {after} is not empty (its runs would resume)")
            args.results_dir = after
        code = _time_here(args)
        if args.keep:
            print(f"\nresults kept in {args.results_dir}")
        return code
    from chronobench.bench.compare import agreement, format_comparison, run_side

    with tempfile.TemporaryDirectory(prefix="chronobench-bench-compare-") as tmp:
        keep = os.path.abspath(args.keep) if args.keep else tmp
        for side in ("before", "after"):
            if os.path.isdir(os.path.join(keep, side)) and os.listdir(os.path.join(keep, side)):
                raise SystemExit(f"--keep: {keep}/{side} is not empty (its runs would resume)")
        sides = {}
        for side, extra in (("before", list(args.before)), ("after", [])):
            code = run_side(args, side, extra, tmp, os.path.join(keep, side))
            if code:
                return code
            with open(os.path.join(tmp, f"{side}.json"), encoding="utf-8") as f:
                sides[side] = json.load(f)
        print()
        for side in ("before", "after"):
            got = sides[side]
            print(f"{side}: {' '.join(got['overrides'])}")
            print(f"  load at start {got['load_start']}, at end {got['load_end']}")
            print(f"  texts embedded {got['embedded']}")
        print(format_comparison(sides["before"], sides["after"], STAGES))
        print(
            "seconds, all cells together; total: the cells, wall: the run with config "
            "composition, process: the whole child process (interpreter start and imports too)"
        )
        lines = agreement(Path(keep) / "before", Path(keep) / "after")
        if lines:
            print("\nafter vs before, per request:")
            print("\n".join(lines))
        if args.keep:
            print(f"\nresults kept in {keep}/before and {keep}/after")
    return 0


def _time_here(args: argparse.Namespace) -> int:
    """Run the experiment in this process with stage timers; print the per-cell table."""
    from chronobench.bench.compare import load_averages
    from chronobench.runner import cell as cell_module
    from chronobench.runner.experiment import run_overrides

    # Loaded now so that the functions they import by name are patched in them too.
    for name in ("generation", "selection", "metrics_io", "components"):
        importlib.import_module(f"chronobench.runner.{name}")

    overrides = [f"experiment={args.experiment}", "leaderboard=false", "progress=false"]
    if args.limit_streams:
        overrides.append(f"dataset.limit_streams={args.limit_streams}")
    overrides += list(args.overrides)
    if not any(o.split("=", 1)[0] == "jobs" for o in overrides):
        # The stage timers patch this process: cells in worker processes (the main job's
        # jobs=auto) would run untimed. Give jobs=N to time the parallel run's wall alone.
        overrides.append("jobs=1")
    clock = StageClock()
    original = cell_module.run_cell

    def timed_cell(cell: Any) -> Any:
        label = cell.describe() if hasattr(cell, "describe") else str(cell)
        clock.start_cell(label)
        try:
            return original(cell)
        finally:
            row = clock.end_cell()
            stages = " ".join(f"{s}={row[s]:.1f}" for s in (*STAGES, "other", "cpu"))
            print(f"  [{len(clock.cells)}] {row['total']:.1f} s  {label}: {stages}", flush=True)

    names = ("CHRONOBENCH_RESULTS", "CHRONOBENCH_CACHE", "CHRONOBENCH_DATA")
    saved_env = {k: os.environ.get(k) for k in names}
    load_start = load_averages()
    with tempfile.TemporaryDirectory(prefix="chronobench-bench-main-") as tmp:
        os.environ["CHRONOBENCH_RESULTS"] = args.results_dir or os.path.join(tmp, "results")
        if args.cache_dir:
            os.environ["CHRONOBENCH_CACHE"] = os.path.abspath(args.cache_dir)
        elif not args.warm:
            os.environ["CHRONOBENCH_CACHE"] = os.path.join(tmp, "cache")
        if not args.warm:
            os.environ["CHRONOBENCH_DATA"] = os.path.join(tmp, "data")  # built from scratch
        if not args.warm and not args.cache_dir:
            from chronomem.embedders import forget_process_embedders

            forget_process_embedders()  # cold: no vector this process embedded before
        cell_module.run_cell = timed_cell  # type: ignore[assignment]
        t0 = time.perf_counter()
        try:
            with instrumented(clock) as missing:
                run_overrides(overrides)
        finally:
            cell_module.run_cell = original  # type: ignore[assignment]
            if not args.warm and not args.cache_dir:
                from chronomem.embedders import forget_process_embedders

                # the caches made during the run point into the temp folder removed below
                forget_process_embedders()
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        wall = time.perf_counter() - t0
    print()
    caches = (
        f"caches in {args.cache_dir}"
        if args.cache_dir
        else ("configured caches and data" if args.warm else "empty caches, data built (cold)")
    )
    print(f"bench main: {' '.join(overrides)} ({caches})")
    from chronobench.runner import parallel

    in_workers = not clock.cells and bool(parallel.LAST_STATS)
    if in_workers:  # no stage timers in worker processes: each cell's wall time
        clock.cells = [_untimed_row(s) for s in parallel.LAST_STATS]
        print("cells ran in worker processes: seconds per cell only (stages need jobs=1)")
    print(format_table(clock.cells))
    print(f"wall time {wall:.1f} s (cells + config composition + start-up); load {load_averages()}")
    from chronomem import embedders

    used = embedders.shared_caches()
    embedded = sum(c.stats["embedded"] for c in used)
    served = sum(c.stats["hits"] + c.stats["disk_hits"] for c in used)
    if in_workers:
        embedded = sum(int(s.get("embedded", 0)) for s in parallel.LAST_STATS)
        print(
            f"texts embedded {embedded} (by the workers; one process at a time computes a "
            "text's vector, so none is counted twice)"
        )
    else:
        print(f"texts embedded {embedded}, served from the embedding cache {served}")
    if missing:
        print("not instrumented (absent in this version): " + ", ".join(missing))
    if args.json_out:
        result = {
            "overrides": overrides,
            "cells": clock.cells,
            "wall": wall,
            "embedded": embedded,
            "load_start": load_start,
            "load_end": load_averages(),
        }
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(result, f)
    return 0
