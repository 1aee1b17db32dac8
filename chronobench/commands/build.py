"""``chronobench build locomo|mab ...``: build datasets and print their statistics."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from chronobench.data.io import MANIFEST_FILE, read_json
from data_builders.build import build_dataset
from data_builders.errors import DatasetError
from data_builders.stats import format_stats


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="chronobench build", description=__doc__)
    sub = p.add_subparsers(dest="dataset", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--source", help="local source file (default: see README)")
    common.add_argument("--out", help="output root (default: <repo>/data/built)")
    common.add_argument("--stats", action="store_true", help="print dataset statistics")
    common.add_argument("--force", action="store_true", help="rebuild even if up to date")
    common.add_argument("--max-queries-per-stream", type=int, default=40, help="0 = all")
    common.add_argument("--max-answerable", type=int, default=3)
    common.add_argument("--max-future", type=int, default=3)
    common.add_argument("--seed", type=int, default=0)
    lo = sub.add_parser("locomo", parents=[common], help="LoCoMo (locomo10.json)")
    lo.add_argument(
        "--granularity", default="session", choices=["session", "turn", "observation", "all"]
    )
    lo.add_argument("--strict", action="store_true", help="fail on unknown evidence ids")
    lo.add_argument(
        "--max-boundary",
        type=int,
        default=10,
        help="boundary QA probes per side (session at v*, first session after it)",
    )
    mab = sub.add_parser("mab", parents=[common], help="MemoryAgentBench")
    mab.add_argument("--split", required=True)
    mab.add_argument("--revision", default="main", help="hub revision (pin for reproducibility)")
    mab.add_argument("--chunk-size", type=int, default=512)
    mab.add_argument("--chunk-unit", choices=["chars", "tokens"], default="tokens")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 on bad input, with the reason on stderr)."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    common = {
        "source": args.source,
        "out_dir": args.out,
        "force": args.force,
        "max_queries_per_stream": args.max_queries_per_stream,
        "max_answerable": args.max_answerable,
        "max_future": args.max_future,
        "seed": args.seed,
    }
    try:
        if args.dataset == "locomo":
            grans = (
                ["session", "turn", "observation"]
                if args.granularity == "all"
                else [args.granularity]
            )
            folders = [
                build_dataset(
                    "locomo",
                    granularity=g,
                    strict=args.strict,
                    max_boundary=args.max_boundary,
                    **common,
                )
                for g in grans
            ]
        else:
            folders = [
                build_dataset(
                    "mab",
                    split=args.split,
                    revision=args.revision,
                    chunk_size=args.chunk_size,
                    chunk_unit=args.chunk_unit,
                    **common,
                )
            ]
    except DatasetError as exc:
        print(f"chronobench build: error: {exc}", file=sys.stderr)
        return 2
    for folder in folders:
        print(f"built {folder}")
        if args.stats:
            print(format_stats(read_json(folder / MANIFEST_FILE)))
    return 0
