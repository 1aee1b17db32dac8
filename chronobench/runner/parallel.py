"""Run an experiment's cells in worker processes, several at once (``jobs``).

Why processes: a cell is mostly single-threaded Python (item search, the extractive
reader, scoring), so on a machine with several cores one cell leaves the others idle.
Each worker is a fresh interpreter (``spawn``: no inherited locks, connections or
threads) that runs whole cells; what a cell writes does not depend on where it runs, so
the run folders are byte-identical to a sequential run's (``tests/test_runner_e2e.py``).

What the workers share goes through files built for it: the embedding cache and the
call cache are SQLite files in WAL mode with a busy timeout, and the workers split a
cache file's missing vectors between them (each claims the texts nobody is computing,
``PersistentVectors.claim`` in :mod:`chronomem.vector_cache`), so no text is embedded
twice and two cells embed on two cores at once. Each worker gets its share of the CPUs
for torch's and BLAS's threads (:func:`_worker_init`). Cells are ordered by *warm
groups* (:func:`warm_group`, cells that embed the same descriptors: one dataset at one
granularity): the first cell of a group runs before any other cell of that group
starts, so the others read its vectors instead of queueing behind it for the lock.
The generation cells of ChronoMem's family (ChronoMem, the oracle, the restore floors:
:func:`chain_group`) run as one chain in one worker, started before single cells once
ready: they read one process-wide prompt memo, and most of their restored states are
the same, so each later cell reuses the searches of the ones before it.
Every dataset is built before the first cell starts, each folder by one worker (so two
workers never build one folder at once, and two builds run side by side); the user
query files are then checked in the workers, all of them before the first cell starts
(as a sequential run checks them), since building a file's probes is seconds of work
each.

A cell's console output (its tables) is held by its worker and printed whole when the
cell ends; a worker draws no progress line of its own, it reports its counts to the
parent's display (:mod:`chronobench.runner.progress`). A failing cell stops new cells from
starting; the cells already running finish (runs resume, so nothing is lost), then the
first error is raised. What a failed cell printed, and the output of the cells its chain
finished before it, is printed too, in the cells' order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from chronobench.errors import ConfigError

#: Texts each finished cell embedded, in suite order, from the last :func:`run_parallel`
#: (what ``bench main`` reports for a parallel run; a sequential run reads the caches).
LAST_STATS: list[dict[str, Any]] = []


#: The most workers ``jobs=auto`` starts: each holds its own embedding model, stores and
#: caches (a main-job worker peaked at 4.4 GB resident), and more than a few workers
#: mostly queue for the embedding cache's compute lock.
AUTO_MAX_JOBS = 4


def resolve_jobs(value: Any, n_cells: int) -> int:
    """Worker processes for ``n_cells`` cells: ``jobs`` as configured (an integer >= 1,
    or ``auto``: one per CPU this process may use, at most :data:`AUTO_MAX_JOBS`),
    never more than the cells."""
    if value in (None, "auto"):
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        jobs = min(int(cpus or 1), AUTO_MAX_JOBS)
    elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"config key 'jobs': {value!r} is not a number of processes; give an integer "
            ">= 1 (1 runs the cells one after another in this process) or auto"
        )
    else:
        jobs = value
    return max(1, min(jobs, n_cells))


def _built_here(cell: Any) -> bool:
    """Whether :func:`prebuild` builds the cell's dataset (a benchmark cell's, which has a
    builder, not paraphrased by a backbone: a paraphrased one needs its cell's backbone)."""
    return cell.dataset is not None and not cell.spec.dataset.paraphrase


#: Backbones that load a model into this machine (its GPU): two workers would each load
#: one, so ``jobs=auto`` runs their cells one at a time.
LOCAL_MODEL_BACKBONES = ("vllm", "transformers")


def local_models(cells: Sequence[Any]) -> list[str]:
    """The local-model backbones (:data:`LOCAL_MODEL_BACKBONES`) that ``cells`` build."""
    from chronobench.runner.components import needs_backbone

    names = {
        c.spec.backbone.name
        for c in cells
        if c.spec.backbone.name in LOCAL_MODEL_BACKBONES and needs_backbone(c.spec)
    }
    return sorted(names)


def warm_group(cell: Any) -> tuple[Any, ...]:
    """Cells that embed the same texts when they index their streams: one dataset build
    at one granularity (the other settings change what is asked, not what is indexed).
    A dataset its cell builds itself groups every granularity of the build, so that one
    folder is never built by two workers at once."""
    from chronobench.runner.datasets import build_folder_key

    d = cell.spec.dataset
    where = (build_folder_key(d), cell.spec.paths.data_dir)
    return (*where, d.granularity, d.limit_streams) if _built_here(cell) else where


def chain_group(cell: Any) -> tuple[Any, ...] | None:
    """Generation cells whose systems restore a version and read it as ChronoMem does
    (:class:`~chronobench.systems.chronomem.ChronoMemSystem` and its subclasses: the
    oracle, the restore floors), on one dataset at one granularity: their prompts come
    from one process-wide memo (``shared_prompts``), so they run one after another in
    one worker and each reads the states the others already searched. None: the cell
    runs on its own."""
    system = getattr(cell, "system", None)
    if system is None or not cell.spec.task.generates:
        return None
    target = system.entry.load()
    from chronobench.systems.chronomem import ChronoMemSystem

    if not (isinstance(target, type) and issubclass(target, ChronoMemSystem)):
        return None
    return ("restoring reader", *warm_group(cell))


def prebuild(cells: Sequence[Any], pool: ProcessPoolExecutor | None = None) -> None:
    """Build every dataset of ``cells`` that :func:`_built_here`, once each, before any
    cell starts: here, or on ``pool``'s workers side by side (each folder by one worker;
    a build is single-threaded, and the main job builds two)."""
    from chronobench.runner.datasets import build_folder_key, ensure_built
    from chronobench.runner.usage import measured

    todo: dict[tuple[Any, ...], Any] = {}
    for cell in cells:
        if _built_here(cell):
            d, data_dir = cell.spec.dataset, cell.spec.paths.data_dir
            todo.setdefault((build_folder_key(d), d.granularity, data_dir), (d, data_dir))
    if pool is None or len(todo) < 2:
        for d, data_dir in todo.values():
            ensure_built(d, data_dir)
        return
    # An int8 model not exported yet is exported beside the builds (single-threaded
    # work both), instead of by the first cell while the other workers wait for it.
    exports = [pool.submit(measured, _prepare_embedder, *e) for e in _missing_exports(cells)]
    builds = [pool.submit(measured, ensure_built, d, data_dir) for d, data_dir in todo.values()]
    for fut in [*builds, *exports]:
        worker_result(fut)  # the first failing build, in suite order, is the error


def _missing_exports(cells: Sequence[Any]) -> list[tuple[dict[str, Any], str]]:
    """(embedder spec, cache folder) of every onnx_int8 embedder the cells use whose
    exported model is not in its cache folder yet."""
    from chronomem.onnx_embedder import OnnxEmbedder

    out: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
    for cell in cells:
        emb, cache_dir = cell.spec.embedder, str(cell.spec.paths.cache_dir)
        if emb.runtime != "onnx_int8" or (emb.model, cache_dir) in out:
            continue
        try:
            missing = not OnnxEmbedder(emb.model, cache_dir=cache_dir).export_path().is_file()
        except Exception:  # noqa: BLE001 - the cell reports an unusable model itself
            continue
        if missing:
            out[(emb.model, cache_dir)] = (emb.model_dump(), cache_dir)
    return list(out.values())


def _prepare_embedder(spec: dict[str, Any], cache_dir: str) -> None:
    from chronobench.systems.stores import EMBEDDING_CACHE_FILE
    from chronomem import resolve_embedder
    from chronomem.embedders import shared_cache

    embedder = resolve_embedder(spec)
    shared_cache(embedder).attach(Path(cache_dir) / EMBEDDING_CACHE_FILE)
    embedder.prepare()


def _embedded() -> int:
    from chronomem import embedders

    return sum(c.stats["embedded"] for c in embedders.shared_caches())


def _run_chain_in_worker(cells: Sequence[Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """Run ``cells`` one after another in one worker (a :func:`chain_group`): each
    one's (run folder, console output, counters), in order. When one fails, the cells
    before it have written their folders: their results travel on the error
    (:func:`_hand_over`), so the parent prints and counts them as it does any cell."""
    finished: list[tuple[str, str, dict[str, Any]]] = []
    for cell in cells:
        try:
            finished.append(_run_in_worker(cell))
        except BaseException as exc:
            _hand_over(exc, FINISHED, finished)
            raise
    return finished


def _run_in_worker(cell: Any) -> tuple[str, str, dict[str, Any]]:
    """Run one cell in a worker: (run folder, its console output, its counters)."""
    from chronobench.runner import cell as cell_module
    from chronobench.runner.usage import measured

    quiet = dataclasses.replace(cell, spec=cell.spec.model_copy(update={"progress": False}))
    out = io.StringIO()
    before = _embedded()
    try:
        with contextlib.redirect_stdout(out):
            folder, used = measured(cell_module.run_cell, quiet)
    except BaseException as exc:
        _hand_over(exc, PRINTED, out.getvalue())  # what the cell printed before it failed
        raise
    stats = {"embedded": _embedded() - before, "seconds": round(used["wall"], 3), **used}
    return str(folder), out.getvalue(), stats


#: Attributes a worker's error carries to the parent: the console output of the failed
#: cell up to its error, and the results of the cells its chain finished before it.
PRINTED = "chronobench_printed"
FINISHED = "chronobench_finished"


def _hand_over(exc: BaseException, name: str, value: Any) -> None:
    """Attach ``value`` to ``exc`` as ``name`` for the parent, which prints it in the
    cells' order. An exception pickles its attributes with it; one that cannot be
    pickled with them reaches the parent without, so the output is printed here."""
    import pickle

    try:
        setattr(exc, name, value)
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure means: print it here instead
        with contextlib.suppress(AttributeError):
            delattr(exc, name)
        outputs = [value] if name == PRINTED else [output for _, output, _ in value]
        sys.stdout.write("".join(outputs))
        sys.stdout.flush()


#: Variables that set a numeric library's thread count when it loads.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _worker_init(queue: Any, threads: int) -> None:
    """A worker's start: its share of the CPUs for torch and BLAS (``threads``, unless
    the user set the variables), and its progress reports to the parent's ``queue``.
    Workers side by side each with every CPU's worth of threads would preempt each
    other's threads mid-operation (the embedding model's matrix products spin-wait for
    their sibling threads)."""
    from chronobench.runner import progress

    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(threads))
    if queue is not None:
        progress.worker_init(queue)


def _validate_in_worker(cell: Any) -> tuple[None, dict[str, float]]:
    from chronobench.runner.query_files import validate_query_file
    from chronobench.runner.usage import measured

    return measured(validate_query_file, cell)


def worker_result(fut: Future[Any]) -> Any:
    """The result of a :func:`~chronobench.runner.usage.measured` task, its usage
    charged to the phases open in this process."""
    from chronobench.runner import usage

    result, used = fut.result()
    usage.current().worker(used)
    return result


def run_parallel(cells: Sequence[Any], jobs: int, shown: Any = None) -> list[Path]:
    """Build the datasets here, check every user query file in the workers (all of them
    before any cell starts, as a sequential run does), then run ``cells`` on ``jobs``
    worker processes (see the module); returns the run folders in suite order.

    ``shown``: the run's :class:`~chronobench.runner.progress.Cells` display; while it
    draws, the workers report their cells' inner counts to it."""
    from chronobench.runner import progress, usage
    from chronobench.runner.query_files import query_file_cells, validate_query_file

    context = multiprocessing.get_context("spawn")
    shown = shown if shown is not None else progress.cells(len(cells), enabled=False)
    queue = None
    if shown.drawing:
        queue = context.Queue()
        shown.listen(queue)
    threads = max(1, usage.cpus() // jobs)
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_worker_init,
        initargs=(queue, threads),
    )
    try:
        with usage.phase("datasets"):
            prebuild(cells, pool)
        with usage.phase("query files"):
            to_check = query_file_cells(cells)
            built = [_built_here(c) for c in to_check]
            # A dataset built by its own loader is checked here: the check may build it.
            for cell in (c for c, b in zip(to_check, built, strict=True) if not b):
                validate_query_file(cell)
            checks = [
                pool.submit(_validate_in_worker, c)
                for c, b in zip(to_check, built, strict=True)
                if b
            ]
            for fut in checks:
                worker_result(fut)  # the first bad file, in suite order, is the error
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    with usage.phase("cells"):
        return _run_cells(pool, cells, jobs, shown)


def _units(cells: Sequence[Any], leaders: set[int]) -> list[list[int]]:
    """The cells' indexes as the runner submits them, in suite order: one cell alone, or
    a :func:`chain_group`'s cells together at its first cell's place (the runner starts
    a ready chain before single cells). A warm group's first cell always runs alone, so
    the cells waiting for it never wait for a chain."""
    units: list[list[int]] = []
    chains: dict[tuple[Any, ...], list[int]] = {}
    for i, cell in enumerate(cells):
        key = None if i in leaders else chain_group(cell)
        if key is None:
            units.append([i])
        elif key in chains:
            chains[key].append(i)
        else:
            chains[key] = [i]
            units.append(chains[key])
    return units


def _run_cells(
    pool: ProcessPoolExecutor, cells: Sequence[Any], jobs: int, shown: Any
) -> list[Path]:
    from chronobench.runner import usage
    from chronobench.runner.progress import took

    n = len(cells)
    groups = [warm_group(c) for c in cells]
    leader = {g: i for i, g in reversed(list(enumerate(groups)))}  # first cell per group
    folders: list[Path | None] = [None] * n
    stats: list[dict[str, Any]] = [{} for _ in cells]
    done: set[int] = set()
    todo = _units(cells, set(leader.values()))
    running: dict[Future[Any], list[int]] = {}
    failure: BaseException | None = None

    def ready(unit: list[int]) -> bool:
        return all(leader[groups[i]] == i or leader[groups[i]] in done for i in unit)

    def finish(i: int, result: tuple[str, str, dict[str, Any]]) -> None:
        folder, output, stats[i] = result
        sys.stdout.write(output)
        stats[i]["cell"] = cells[i].describe()
        usage.current().worker(stats[i])
        usage.cell(stats[i]["cell"], stats[i], note=f"{stats[i]['embedded']} embedded")
        folders[i] = Path(folder)
        done.add(i)
        shown.finish()
        t0 = time.perf_counter() - float(stats[i]["seconds"])  # the cell's own wall
        print(f"[{i + 1}/{n}] wrote {folder} ({took(t0, shown)})", flush=True)

    try:
        while todo or running:
            while failure is None and len(running) < jobs:
                # A chain first: it is the longest unit, and once it starts last the
                # other workers finish their cells and wait for it.
                nxt = next((u for u in todo if len(u) > 1 and ready(u)), None)
                nxt = nxt or next((u for u in todo if ready(u)), None)
                if nxt is None:
                    break
                todo.remove(nxt)
                for i in nxt:
                    print(f"[{i + 1}/{n}] {cells[i].describe()}", flush=True)
                if len(nxt) == 1:
                    running[pool.submit(_run_in_worker, cells[nxt[0]])] = nxt
                else:
                    running[pool.submit(_run_chain_in_worker, [cells[i] for i in nxt])] = nxt
            if not running:
                break  # a failure left cells unstarted
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in finished:
                unit = running.pop(fut)
                try:
                    got = fut.result()
                except BaseException as exc:  # noqa: BLE001 - re-raised below, first one wins
                    # A chain's cells before the failed one finished: print and count them.
                    earlier = getattr(exc, FINISHED, [])
                    for i, result in zip(unit, earlier, strict=False):
                        finish(i, result)
                    sys.stdout.write(getattr(exc, PRINTED, ""))
                    sys.stdout.flush()
                    if failure is None:
                        failure = exc
                    continue
                for i, result in zip(unit, [got] if len(unit) == 1 else got, strict=True):
                    finish(i, result)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    LAST_STATS[:] = stats
    if failure is not None:
        raise failure
    return [f for f in folders if f is not None]
