"""``python -m chronobench show RUN QUERY_ID [--json]``: one query's story in the terminal.

The request, the version chosen against the gold v* (session, date, summary), and every
scored question with the answer, the gold, the score, its label and leakage flags, from
the run's per-query file (``queries.jsonl.gz``). RUN is a run folder, or a run id (or
a unique part of it) under the results folder's ``runs/`` or ``published/``; QUERY_ID is
a query id or its unique tail (``restore_to/ev-s1-1``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def _find_run(run: str, results: Path) -> Path:
    from chronobench.errors import ResultsError

    path = Path(run)
    if path.is_dir():
        return path
    found = sorted(
        f for sub in ("runs", "published") for f in (results / sub).glob(f"*{run}*") if f.is_dir()
    )
    ids = sorted({f.name for f in found})
    if len(ids) == 1:
        return found[0]  # runs/ before published/: a local run wins
    if not ids:
        raise ResultsError(
            f"no run {run!r} under {results}/runs or {results}/published; give a run folder "
            "or a run id (see `python -m chronobench view`, runs.html)"
        )
    raise ResultsError(f"run {run!r} is ambiguous: {', '.join(ids[:5])}; give more of the id")


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry."""
    from chronobench.commands._args import add_results_option
    from chronobench.paths import results_dir

    parser = argparse.ArgumentParser(prog="chronobench show", description=__doc__)
    parser.add_argument("run", help="run folder, run id or a unique part of it")
    parser.add_argument("query_id", help="query id or its unique tail")
    add_results_option(parser)
    parser.add_argument(
        "--json", action="store_true", help="print the story as one JSON object instead"
    )
    args = parser.parse_args(argv)
    from chronobench.errors import ResultsError
    from chronobench.results.per_query import QUERIES_FILE, QueryFile
    from chronobench.viewer.drill import story, story_data

    folder = _find_run(args.run, Path(args.results or results_dir()))
    path = folder / QUERIES_FILE
    if not path.is_file():
        raise ResultsError(
            f"{folder}: no {QUERIES_FILE} (a run made before the per-query file existed, or "
            "a repair run); rerun the cell to write it"
        )
    qf = QueryFile(path)
    lines = qf.find(args.query_id)
    if not lines:
        sample = ", ".join(sorted({q["query_id"] for q in qf.queries})[:3])
        raise ResultsError(f"{path}: no query {args.query_id!r}; ids look like {sample}")
    if len({ln["query_id"] for ln in lines}) > 1:
        ids = sorted({ln["query_id"] for ln in lines})
        raise ResultsError(f"query {args.query_id!r} is ambiguous: {', '.join(ids[:5])}")
    system = (qf.header.get("cell") or {}).get("system") or "system"
    if args.json:
        import json

        print(json.dumps(story_data(qf, lines[0], system), indent=2, ensure_ascii=False))
        return 0
    for text in story(qf, lines[0], system):
        print(text)
    return 0
