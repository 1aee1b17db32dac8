"""``python -m chronobench bench main-job``: the main job as a new user runs it, profiled.

Runs ``python -m chronobench run --profile`` (the main job unless an override names
another experiment; the leaderboard is rebuilt, as the README's command does) in this
process with empty cache and data folders in a temporary folder (a cold run: every text
embedded, every dataset built) and the results in a temporary folder too, so neither
the real ``results/`` nor the shared caches are touched. The profile table (per phase
and per cell: wall, CPU of this process and its workers, peak RSS; then the whole job's
CPU / (CPUs x wall)) is the last thing printed (:mod:`chronobench.runner.usage`).

``--warm`` keeps the configured cache and data folders (a rerun), ``--cache-dir`` names
one, ``--results-dir`` keeps the run folders and the board (point it at a copy of
``results/`` to compare the board with the published one).

Unlike ``bench main`` (stage timers inside one process, ``jobs=1``), this times the job
as it really runs: its cells on worker processes side by side.
"""

from __future__ import annotations

import argparse
import os
import tempfile


def add_arguments(parser: argparse.ArgumentParser) -> None:
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


def main(args: argparse.Namespace) -> int:
    """Run the job with ``run --profile`` in temporary folders; restore the environment."""
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
