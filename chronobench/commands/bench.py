"""``python -m chronobench bench``: speed benchmarks.

Subcommands:
  store          ChronoMem commit / rollback / resolve latency and bytes per write
  items          the in-memory item index vs the backend's match_items: agreement and speed
  branches       ChronoMem branch and checkout cost at 10k and 100k writes (O(1) in history?)
  agreement      whether two sets of RQ1 runs (e.g. store=sqlite vs postgres) pick the same versions
  rerank-eval    R@1 of hybrid fusion vs the offline DeltaReranker on synthetic streams
  nl-confidence  share of real LoCoMo rollback requests the NL confidence gate refuses
  styles         R@1 / R@5 and refusals of the request resolver per request style of a set
  adk            the ADK memory service's add/search/rollback latency beside the raw store
  peers          memory systems people use: restore fidelity on LoCoMo, bytes and latency
  main           where the main job's time goes: per cell, seconds per stage
  main-job       the main job from empty caches, as it runs: wall, CPU, RSS per phase and cell
  vllm-overhead  the runner's vLLM backbone vs raw batched vllm.generate (needs a GPU)
  llm-cpu        a packaged model's prefill and decode tokens/s on this CPU, per thread count
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path


def _store_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="*",
        default=[1000, 10000],
        help="stream lengths in writes (default: 1000 10000; none: throughput only)",
    )
    parser.add_argument(
        "--embedder",
        choices=["hash", "minilm", "both"],
        default="hash",
        help="hash: fast deterministic (default); minilm: the packaged model",
    )
    parser.add_argument(
        "--backend",
        nargs="+",
        choices=["sqlite", "sqlite-full", "postgres"],
        default=["sqlite"],
        help="store backends, benchmarked one after the other in one run (default: sqlite); "
        "sqlite-full: SQLite with synchronous=FULL, PostgreSQL's durability (each commit "
        "synced to disk before it returns)",
    )
    parser.add_argument(
        "--pg-url",
        default=None,
        help="PostgreSQL server for --backend postgres (default: $CHRONOBENCH_PG_URL, "
        "else a throwaway local cluster)",
    )
    parser.add_argument(
        "--writers",
        type=int,
        nargs="*",
        default=[1, 4, 16],
        help="concurrent writer processes for the throughput figures (default: 1 4 16; none: skip)",
    )
    parser.add_argument(
        "--commits-per-writer", type=int, default=100, help="commits each writer makes"
    )
    parser.add_argument(
        "--save",
        type=Path,
        default=None,
        help="also write the raw figures to this JSON file (for --report)",
    )
    parser.add_argument(
        "--report",
        nargs="+",
        default=None,
        metavar="JSON",
        help="run nothing: print the tables of runs saved with --save, as one set",
    )
    parser.add_argument(
        "--trials",
        type=int,
        default=None,
        help="rollback trials per mode and target, each on a fresh clone of the store "
        "(default: 3 up to 10,000 writes, 1 above)",
    )


def _store(args: argparse.Namespace) -> int:
    from chronobench.bench.store import report_saved, run

    if args.report:
        missing = [p for p in args.report if not os.path.isfile(p)]
        if missing:
            raise SystemExit(f"--report: no such file {missing[0]} (write it with --save)")
        report_saved(args.report)
        return 0
    if any(n < 20 for n in args.sizes):
        raise SystemExit("--sizes: each stream needs at least 20 writes")
    if any(w < 1 for w in args.writers) or args.commits_per_writer < 2:
        raise SystemExit("--writers: each at least 1; --commits-per-writer: at least 2")
    if args.trials is not None and args.trials < 1:
        raise SystemExit("--trials: at least 1")
    run(
        args.sizes,
        ["hash", "minilm"] if args.embedder == "both" else [args.embedder],
        tuple(dict.fromkeys(args.backend)),
        args.pg_url or os.environ.get("CHRONOBENCH_PG_URL") or None,
        tuple(args.writers),
        args.commits_per_writer,
        args.trials,
        args.save,
    )
    return 0


def _nl_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--granularity",
        nargs="+",
        choices=["session", "turn"],
        default=["session"],
        help="LoCoMo stream granularities (default: session)",
    )
    parser.add_argument("--streams", type=int, default=None, help="first N streams only")


def _nl_confidence(args: argparse.Namespace) -> int:
    from chronobench.bench.nl_confidence import main

    return main(args.granularity, args.streams)


def _rerank_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--streams", type=int, default=8, help="test streams (default 8)")
    parser.add_argument("--seed", type=int, default=100, help="first test seed (dev uses 0..)")


def _rerank_eval(args: argparse.Namespace) -> int:
    from chronobench.bench.rerank_eval import main

    return main(args.streams, args.seed)


def _module_arguments(module: str) -> Callable[[argparse.ArgumentParser], None]:
    def add(parser: argparse.ArgumentParser) -> None:
        import importlib

        importlib.import_module(module).add_arguments(parser)  # stdlib-only modules

    return add


def _module_main(module: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        import importlib

        return int(importlib.import_module(module).main(args))

    return run


def _main_job_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``bench main-job``."""
    parser.add_argument(
        "--warm",
        action="store_true",
        help="use the configured cache and data folders (a rerun) instead of empty ones",
    )
    parser.add_argument("--cache-dir", default=None, help="use (and fill) this cache folder")
    parser.add_argument(
        "--results-dir",
        default=None,
        help="write the run folders and the board here (default: a temporary folder)",
    )
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides, key=value")


def _main_job(args: argparse.Namespace) -> int:
    """``bench main-job``: the main job as a new user runs it (``run --profile``, the
    board rebuilt), with empty cache and data folders and the results in a temporary
    folder (``--warm``, ``--cache-dir``, ``--results-dir`` change that), so neither
    ``results/`` nor the shared caches are touched; the profile table comes last. Unlike
    ``bench main`` (stage timers in one process, ``jobs=1``) the cells run on worker
    processes as they really do."""
    import tempfile

    from chronobench.commands import run

    names = ("CHRONOBENCH_RESULTS", "CHRONOBENCH_CACHE", "CHRONOBENCH_DATA")
    saved = {k: os.environ.get(k) for k in names}
    with tempfile.TemporaryDirectory(prefix="chronobench-main-job-") as tmp:
        os.environ["CHRONOBENCH_RESULTS"] = os.path.abspath(
            args.results_dir or os.path.join(tmp, "results")
        )
        if args.cache_dir:
            os.environ["CHRONOBENCH_CACHE"] = os.path.abspath(args.cache_dir)
        elif not args.warm:
            os.environ["CHRONOBENCH_CACHE"] = os.path.join(tmp, "cache")
        if not args.warm:
            os.environ["CHRONOBENCH_DATA"] = os.path.join(tmp, "data")
        kind = "configured caches" if args.warm else "empty caches, data built here (cold)"
        print(f"bench main-job: {kind}; results in {os.environ['CHRONOBENCH_RESULTS']}")
        try:
            return run.main(["--profile", "progress=false", *args.overrides])
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


# name -> (help, add arguments, run). The heavy work is imported only when it runs.
BENCHMARKS: dict[
    str,
    tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]],
] = {
    "store": ("ChronoMem store latency and storage", _store_arguments, _store),
    "items": (
        "item index vs match_items on LoCoMo",
        _module_arguments("chronobench.bench.items"),
        _module_main("chronobench.bench.items"),
    ),
    "branches": (
        "ChronoMem branch/checkout cost vs history length",
        _module_arguments("chronobench.bench.branches"),
        _module_main("chronobench.bench.branches"),
    ),
    "agreement": (
        "same versions in two RQ1 runs?",
        _module_arguments("chronobench.bench.agreement"),
        _module_main("chronobench.bench.agreement"),
    ),
    "nl-confidence": (
        "NL rollback refusals on LoCoMo requests",
        _nl_arguments,
        _nl_confidence,
    ),
    "styles": (
        "R@1 / R@5 and refusals by request style (--set NAME)",
        _module_arguments("chronobench.bench.styles"),
        _module_main("chronobench.bench.styles"),
    ),
    "adk": (
        "ADK memory service latency vs the raw store",
        _module_arguments("chronobench.bench.adk"),
        _module_main("chronobench.bench.adk"),
    ),
    "peers": (
        "peer memory systems: restore fidelity, bytes, latency",
        _module_arguments("chronobench.bench.peers"),
        _module_main("chronobench.bench.peers"),
    ),
    "main": (
        "main job time per cell and stage",
        _module_arguments("chronobench.bench.profile"),
        _module_main("chronobench.bench.profile"),
    ),
    "main-job": (
        "the main job cold: wall, CPU, peak RSS per phase and cell",
        _main_job_arguments,
        _main_job,
    ),
    "vllm-overhead": (
        "harness vs raw vLLM",
        _module_arguments("chronobench.bench.vllm_overhead"),
        _module_main("chronobench.bench.vllm_overhead"),
    ),
    "llm-cpu": (
        "packaged model (smollm2) tokens/s per thread count",
        _module_arguments("chronobench.bench.llm_cpu"),
        _module_main("chronobench.bench.llm_cpu"),
    ),
    "rerank-eval": (
        "hybrid vs DeltaReranker on synthetic streams",
        _rerank_arguments,
        _rerank_eval,
    ),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chronobench bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="name", metavar="<benchmark>", required=True)
    for name, (help_text, add_arguments, _) in BENCHMARKS.items():
        add_arguments(sub.add_parser(name, help=help_text))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = _parser().parse_args(list(argv or []))
    return BENCHMARKS[args.name][2](args)
