"""``python -m chronobench bench``: speed benchmarks.

Subcommands:
  store          ChronoMem commit / rollback / resolve latency and bytes per write
  rerank-eval    R@1 of hybrid fusion vs the offline DeltaReranker on synthetic streams
  nl-confidence  share of real LoCoMo rollback requests the NL confidence gate refuses
  adk            the ADK memory service's add/search/rollback latency beside the raw store
  peers          memory systems people use: restore fidelity on LoCoMo, bytes and latency
  main           where the main job's time goes: per cell, seconds per stage
  vllm-overhead  the runner's vLLM backbone vs raw batched vllm.generate (needs a GPU)
"""

from __future__ import annotations

import argparse
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
    nl = sub.add_parser("nl-confidence", help="NL rollback refusals on LoCoMo requests")
    nl.add_argument(
        "--granularity",
        nargs="+",
        choices=["session", "turn"],
        default=["session"],
        help="LoCoMo stream granularities (default: session)",
    )
    nl.add_argument("--streams", type=int, default=None, help="first N streams only")
    from chronobench.bench.adk import add_arguments as adk_arguments  # stdlib-only import

    adk_arguments(sub.add_parser("adk", help="ADK memory service latency vs the raw store"))
    from chronobench.bench import (  # stdlib-only imports
        peers,  # stdlib-only import
        profile,
        vllm_overhead,
    )

    peers.add_arguments(sub.add_parser("peers", help="peer memory systems: restore fidelity"))
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
        run(args.sizes, embedders)
        return 0
    if args.name == "nl-confidence":
        from chronobench.bench.nl_confidence import main as nl_main

        return nl_main(args.granularity, args.streams)
    if args.name == "adk":
        from chronobench.bench.adk import main as adk_main

        return adk_main(args)
    if args.name == "peers":
        from chronobench.bench.peers import main as peers_main

        return peers_main(args)
    if args.name in ("main", "vllm-overhead"):
        from chronobench.bench import profile, vllm_overhead

        return (profile if args.name == "main" else vllm_overhead).main(args)
    from chronobench.bench.rerank_eval import main as eval_main

    return eval_main(args.streams, args.seed)
