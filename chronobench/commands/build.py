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
    # Every build default is the builder's (LOCOMO_DEFAULTS / MAB_DEFAULTS): a flag left out
    # is not passed, so the builder's value applies; the help text quotes it from there.
    from data_builders.build import LOCOMO_DEFAULTS as LO
    from data_builders.build import MAB_DEFAULTS as MAB

    p = argparse.ArgumentParser(prog="chronobench build", description=__doc__)
    sub = p.add_subparsers(dest="dataset", required=True)

    def common(defaults: dict) -> argparse.ArgumentParser:
        c = argparse.ArgumentParser(add_help=False)
        c.add_argument("--source", help="local source file (default: see README)")
        c.add_argument("--out", help="output root (default: <repo>/data/built)")
        c.add_argument("--stats", action="store_true", help="print dataset statistics")
        c.add_argument("--force", action="store_true", help="rebuild even if up to date")
        c.add_argument(
            "--max-queries-per-stream",
            type=int,
            help=f"0 = all (default: {defaults['max_queries_per_stream']})",
        )
        c.add_argument(
            "--max-answerable", type=int, help=f"(default: {defaults['max_answerable']})"
        )
        c.add_argument("--max-future", type=int, help=f"(default: {defaults['max_future']})")
        c.add_argument("--seed", type=int, help=f"(default: {defaults['seed']})")
        return c

    lo = sub.add_parser("locomo", parents=[common(LO)], help="LoCoMo (locomo10.json)")
    lo.add_argument(
        "--granularity", default="session", choices=["session", "turn", "observation", "all"]
    )
    lo.add_argument(
        "--strict", action="store_true", default=None, help="fail on unknown evidence ids"
    )
    lo.add_argument(
        "--max-boundary",
        type=int,
        help="boundary QA probes per side (session at v*, first session after it; "
        f"default: {LO['max_boundary']})",
    )
    mab = sub.add_parser("mab", parents=[common(MAB)], help="MemoryAgentBench")
    mab.add_argument("--split", required=True)
    mab.add_argument(
        "--revision", help=f"hub dataset commit (default: the pinned {MAB['revision']})"
    )
    mab.add_argument("--chunk-size", type=int, help=f"(default: {MAB['chunk_size']})")
    mab.add_argument(
        "--chunk-unit", choices=["chars", "tokens"], help=f"(default: {MAB['chunk_unit']})"
    )
    return p


def _given(**params: object) -> dict[str, object]:
    """The build parameters a flag set (the rest are the builder's defaults)."""
    return {k: v for k, v in params.items() if v is not None}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 on bad input, with the reason on stderr)."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    common = {
        "source": args.source,
        "out_dir": args.out,
        "force": args.force,
        **_given(
            max_queries_per_stream=args.max_queries_per_stream,
            max_answerable=args.max_answerable,
            max_future=args.max_future,
            seed=args.seed,
        ),
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
                    **_given(strict=args.strict, max_boundary=args.max_boundary),
                    **common,
                )
                for g in grans
            ]
        else:
            folders = [
                build_dataset(
                    "mab",
                    split=args.split,
                    **_given(
                        revision=args.revision,
                        chunk_size=args.chunk_size,
                        chunk_unit=args.chunk_unit,
                    ),
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
