"""Do two sets of RQ1 runs select the same versions? (``python -m chronobench bench agreement``)

Made for the store backends: run the selection cells once with ``store=sqlite`` and once
with ``store=postgres`` (two results folders), then compare. Runs are paired by their
run id without the hash (dataset, granularity, query file); samples by selector and
query id. Printed per request set and selector: the share of requests whose top-ranked
version is the same, and Recall@1 on each side.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommand's arguments."""
    parser.add_argument("a", type=Path, help="results folder of the first runs (e.g. sqlite)")
    parser.add_argument("b", type=Path, help="results folder of the second runs (e.g. postgres)")
    parser.add_argument("--min", type=float, default=None, help="fail below this share (0-1)")
    parser.add_argument(
        "--show",
        action="store_true",
        help="list every request whose top version or ranked list differs (e.g. before/after "
        "a speed change, which must change none)",
    )


def _runs(results: Path) -> dict[str, Path]:
    runs = results / "runs"
    if not runs.is_dir():
        raise SystemExit(f"{results}: no runs/ folder; pass a results folder (CHRONOBENCH_RESULTS)")
    return {p.name.rsplit("__", 1)[0]: p for p in sorted(runs.iterdir()) if p.is_dir()}


def _ranked(run: Path) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """Each selection sample's ranked list, scores to six decimals."""
    out: dict[tuple[str, str], list[tuple[int, float]]] = {}
    with (run / "samples.jsonl").open() as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("kind") == "selection":
                ranked = [(int(v), round(float(s), 6)) for v, s in row["ranked"]]
                out[(row["selector"], row["query_id"])] = ranked
    return out


def differences(a: Path, b: Path) -> list[dict[str, Any]]:
    """Every (run, selector, request) whose ranked list differs between ``a`` and ``b``."""
    ra, rb = _runs(a), _runs(b)
    out = []
    for key in sorted(set(ra) & set(rb)):
        la, lb = _ranked(ra[key]), _ranked(rb[key])
        for sq in sorted(set(la) & set(lb)):
            if la[sq] != lb[sq]:
                top_a = la[sq][0][0] if la[sq] else None
                top_b = lb[sq][0][0] if lb[sq] else None
                out.append({"run": key, "selector": sq[0], "query_id": sq[1],
                            "top_a": top_a, "top_b": top_b})  # fmt: skip
    return out


def _tops(run: Path) -> dict[tuple[str, str], tuple[int | None, int]]:
    out: dict[tuple[str, str], tuple[int | None, int]] = {}
    with (run / "samples.jsonl").open() as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("kind") != "selection":
                continue
            top = row["ranked"][0][0] if row["ranked"] else None
            out[(row["selector"], row["query_id"])] = (top, int(row["gold_version"]))
    return out


def compare(a: Path, b: Path) -> list[dict[str, Any]]:
    """One row per (run, selector): requests, same top-1 count, R@1 of each side."""
    ra, rb = _runs(a), _runs(b)
    rows = []
    for key in sorted(set(ra) & set(rb)):
        ta, tb = _tops(ra[key]), _tops(rb[key])
        for sel in sorted({s for s, _ in ta}):
            qids = sorted(q for s, q in ta if s == sel and (s, q) in tb)
            same = sum(ta[(sel, q)][0] == tb[(sel, q)][0] for q in qids)
            r1a = sum(ta[(sel, q)][0] == ta[(sel, q)][1] for q in qids)
            r1b = sum(tb[(sel, q)][0] == tb[(sel, q)][1] for q in qids)
            rows.append({"run": key, "selector": sel, "n": len(qids), "same": same,
                         "r1_a": r1a, "r1_b": r1b})  # fmt: skip
    return rows


def main(args: argparse.Namespace) -> int:
    """Print the agreement table; exit 1 when a share is below ``--min``."""
    rows = compare(args.a, args.b)
    if not rows:
        print(f"no runs in common between {args.a} and {args.b}")
        return 1
    print(
        f"| request set | selector | requests | same top-1 | R@1 {args.a.name} | R@1 {args.b.name} |"
    )
    print("|---|---|---:|---:|---:|---:|")
    worst = 1.0
    for r in rows:
        share = r["same"] / r["n"] if r["n"] else 1.0
        worst = min(worst, share)
        print(
            f"| {r['run'].split('__')[0]} | {r['selector']} | {r['n']} | {r['same']} "
            f"({100 * share:.1f}%) | {100 * r['r1_a'] / max(1, r['n']):.1f} "
            f"| {100 * r['r1_b'] / max(1, r['n']):.1f} |"
        )
    print(f"\nlowest agreement: {100 * worst:.1f}%")
    if args.show:
        diff = differences(args.a, args.b)
        total = sum(r["n"] for r in rows)
        moved = [d for d in diff if d["top_a"] != d["top_b"]]
        print(
            f"ranked lists (ids, scores to 6 decimals): {total - len(diff)} of {total} identical; "
            f"{len(moved)} with a different top version"
        )
        for d in diff:
            print(f"  {d['run']} {d['selector']} {d['query_id']}: top {d['top_a']} -> {d['top_b']}")
    return 1 if args.min is not None and worst < args.min else 0
