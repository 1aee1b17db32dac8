"""``python -m chronobench leaderboard``: rebuild results/LEADERBOARD.md and .csv from runs."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry."""
    parser = argparse.ArgumentParser(prog="chronobench leaderboard", description=__doc__)
    parser.add_argument("--results", type=Path, default=Path("results"), help="results folder")
    args = parser.parse_args(argv)
    from chronobench.leaderboard.build import write_leaderboard

    path = write_leaderboard(args.results)
    print(path.read_text())
    print(f"written: {path} (+ LEADERBOARD.csv)")
    return 0
