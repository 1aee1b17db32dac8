"""Options several subcommands share, stated once."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_results_option(parser: argparse.ArgumentParser, what: str = "results folder") -> None:
    """``--results DIR``: where ``run`` writes (resolved later by ``paths.results_dir``)."""
    from chronobench.paths import RESULTS_ENV

    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help=f"{what} (default: ${RESULTS_ENV}, as `run` writes it, else results)",
    )
