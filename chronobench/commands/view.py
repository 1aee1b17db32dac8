"""``python -m chronobench view [--results DIR] [--out DIR]``: write the results site.

A static site (no server, no network: open ``<out>/index.html`` from disk): the headline
table with 95% CIs and the floors, plots, a page per run and a per-query drill-down
filterable by system, intent and outcome. Reads the published and local runs of the
results folder (``--results``, else ``$CHRONOBENCH_RESULTS``, else ``results``); each
built dataset is its own section, so the tiny fixture never shares a chart with LoCoMo.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry."""
    from chronobench.commands._args import add_results_option
    from chronobench.paths import results_dir

    parser = argparse.ArgumentParser(prog="chronobench view", description=__doc__)
    add_results_option(parser)
    parser.add_argument(
        "--out", type=Path, default=None, help="where the site goes (default: <results>/site)"
    )
    args = parser.parse_args(argv)
    from chronobench.errors import ResultsError
    from chronobench.viewer.site import build_site

    results = Path(args.results or results_dir())
    if not results.is_dir():
        raise ResultsError(
            f"results folder {results} not found; run `python -m chronobench run` first, or "
            "name one with --results DIR"
        )
    out = Path(args.out or results / "site")
    stats = build_site(results, out)
    print(
        f"written: {(out / 'index.html').resolve()} ({stats['runs']} runs, {stats['builds']} "
        f"builds, {stats['pages']} pages, {stats['seconds']:.1f} s); open it in a browser"
    )
    return 0
