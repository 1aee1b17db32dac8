"""``python -m chronobench leaderboard``: rebuild results/LEADERBOARD.md and .csv.

From the committed published runs (results/published/) plus local runs (results/runs/)
of the folder ``run`` writes to (``--results``, else ``$CHRONOBENCH_RESULTS``, else
``results``); it never names fewer runs than the file it replaces unless --force (then:
local runs only). Fixture, smoke and debug runs are never published, nor runs made
outside the main job and the named presets (``publish`` unset) or by ``backbone=export``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry."""
    from chronobench.commands._args import add_results_option
    from chronobench.paths import results_dir

    parser = argparse.ArgumentParser(prog="chronobench leaderboard", description=__doc__)
    add_results_option(parser)
    parser.add_argument(
        "--force",
        action="store_true",
        help="rebuild from local runs only, even if that drops rows of the current file",
    )
    parser.add_argument("--print", action="store_true", help="print the Markdown table")
    args = parser.parse_args(argv)
    from chronobench.leaderboard.build import write_leaderboard

    path = write_leaderboard(args.results or results_dir(), force=args.force)
    if args.print:
        print(path.read_text())
    print(f"written: {path} and {path.with_suffix('.csv')}")
    return 0
