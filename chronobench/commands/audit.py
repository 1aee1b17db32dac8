"""``python -m chronobench audit``: check every headline's validity contract.

Runs each track's audit (its oracle, error curves and attack families through the real
scorers), writes ``results/audit/<track>.json`` and ``results/AUDIT.md`` and exits 1 when
a headline breaks its contract (a published control set's row is shown, not counted; the
comparison with a track's baselines is printed, not counted: docs/audit.md). ``--fast``
is the test suite's small version: it checks the properties, prints the table and
writes nothing unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry."""
    from chronobench.commands._args import add_results_option
    from chronobench.paths import results_dir

    parser = argparse.ArgumentParser(prog="chronobench audit", description=__doc__)
    parser.add_argument("--track", action="append", help="audit only this track (repeatable)")
    parser.add_argument("--fast", action="store_true", help="small data, nothing published")
    parser.add_argument("--out", type=Path, help="folder for the audit files "
                        "(default: <results>/audit; --fast writes none unless given)")  # fmt: skip
    add_results_option(parser)
    args = parser.parse_args(argv)

    from chronobench.audit.registry import AuditOptions
    from chronobench.audit.report import audit_table, run_audits, write_audits

    results = Path(args.results or results_dir())
    audits = run_audits(args.track, AuditOptions(fast=args.fast, results=results))
    print(audit_table(audits))
    out = args.out or (None if args.fast else results / "audit")
    if out is not None:
        for path in write_audits(audits, out):
            print(f"written: {path.resolve()}")
    failed = [a for a in audits if not a.passes and not a.control]
    for a in audits:
        if not a.passes:
            what = "control set (not a headline)" if a.control else "breaks its contract"
            print(f"audit: {a.track} / {a.headline}: {what}: " + "; ".join(a.failures()))
        if a.baselines:
            print(f"audit: {a.track} / {a.headline}: {a.comparison()}")
    return 1 if failed else 0
