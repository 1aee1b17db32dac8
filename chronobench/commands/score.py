"""``python -m chronobench score <run-dir>...``: recompute metrics from samples.jsonl."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry."""
    from chronobench.runner.metrics_io import summary_table
    from chronobench.runner.scoring import rescore_run

    parser = argparse.ArgumentParser(prog="chronobench score", description=__doc__)
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (results/runs/<id>)")
    parser.add_argument(
        "--write-samples",
        action="store_true",
        help="also rewrite per-sample scores in samples.jsonl",
    )
    args = parser.parse_args(argv)
    for run in args.runs:
        metrics = rescore_run(run, write_samples=args.write_samples)
        print(summary_table(run.name, metrics))
        print(f"written: {(run / 'metrics.json').resolve()}")
    return 0
