"""``python -m chronobench bench``: speed benchmarks.

Subcommands:
  store          ChronoMem commit / rollback / resolve latency and bytes per write
  agreement      whether two sets of RQ1 runs (e.g. store=sqlite vs postgres) pick the same versions
  rerank-eval    R@1 of hybrid fusion vs the offline DeltaReranker on synthetic streams
  nl-confidence  share of real LoCoMo rollback requests the NL confidence gate refuses
  adk            the ADK memory service's add/search/rollback latency beside the raw store
  main           where the main job's time goes: per cell, seconds per stage
  vllm-overhead  the runner's vLLM backbone vs raw batched vllm.generate (needs a GPU)
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chronobench bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="name", metavar="<benchmark>", required=True)
    store = sub.add_parser("store", help="ChronoMem store latency and storage")
    store.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[1000, 10000],
        help="stream lengths in writes (default: 1000 10000)",
    )
    store.add_argument(
        "--embedder",
        choices=["hash", "minilm", "both"],
        default="hash",
        help="hash: fast deterministic (default); minilm: the packaged model",
    )
    store.add_argument(
        "--backend",
        nargs="+",
        choices=["sqlite", "postgres"],
        default=["sqlite"],
        help="store backends, benchmarked one after the other in one run (default: sqlite)",
    )
    store.add_argument(
        "--pg-url",
        default=None,
        help="PostgreSQL server for --backend postgres (default: $CHRONOBENCH_PG_URL, "
        "else a throwaway local cluster)",
    )
    store.add_argument(
        "--writers",
        type=int,
        nargs="*",
        default=[1, 4, 16],
        help="concurrent writer processes for the throughput figures (default: 1 4 16; none: skip)",
    )
    store.add_argument(
        "--commits-per-writer", type=int, default=100, help="commits each writer makes"
    )
    nl = sub.add_parser("nl-confidence", help="NL rollback refusals on LoCoMo requests")
    nl.add_argument(
        "--granularity",
        nargs="+",
        choices=["session", "turn"],
        default=["session"],
        help="LoCoMo stream granularities (default: session)",
    )
    nl.add_argument("--streams", type=int, default=None, help="first N streams only")
    from chronobench.bench import agreement  # stdlib-only import

    agreement.add_arguments(sub.add_parser("agreement", help="same versions in two RQ1 runs?"))
    from chronobench.bench.adk import add_arguments as adk_arguments  # stdlib-only import

    adk_arguments(sub.add_parser("adk", help="ADK memory service latency vs the raw store"))
    from chronobench.bench import profile, vllm_overhead  # stdlib-only imports

    profile.add_arguments(sub.add_parser("main", help="main job time per cell and stage"))
    vllm_overhead.add_arguments(sub.add_parser("vllm-overhead", help="harness vs raw vLLM"))
    ev = sub.add_parser("rerank-eval", help="hybrid vs DeltaReranker on synthetic streams")
    ev.add_argument("--streams", type=int, default=8, help="test streams (default 8)")
    ev.add_argument("--seed", type=int, default=100, help="first test seed (dev uses 0..)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = _parser().parse_args(list(argv or []))
    if args.name == "store":
        from chronobench.bench.store import run

        if any(n < 20 for n in args.sizes):
            raise SystemExit("--sizes: each stream needs at least 20 writes")
        embedders = ["hash", "minilm"] if args.embedder == "both" else [args.embedder]
        if any(w < 1 for w in args.writers) or args.commits_per_writer < 2:
            raise SystemExit("--writers: each at least 1; --commits-per-writer: at least 2")
        run(
            args.sizes,
            embedders,
            tuple(dict.fromkeys(args.backend)),
            args.pg_url or os.environ.get("CHRONOBENCH_PG_URL") or None,
            tuple(args.writers),
            args.commits_per_writer,
        )
        return 0
    if args.name == "nl-confidence":
        from chronobench.bench.nl_confidence import main as nl_main

        return nl_main(args.granularity, args.streams)
    if args.name == "agreement":
        from chronobench.bench import agreement

        return agreement.main(args)
    if args.name == "adk":
        from chronobench.bench.adk import main as adk_main

        return adk_main(args)
    if args.name in ("main", "vllm-overhead"):
        from chronobench.bench import profile, vllm_overhead

        return (profile if args.name == "main" else vllm_overhead).main(args)
    from chronobench.bench.rerank_eval import main as eval_main

    return eval_main(args.streams, args.seed)
