"""``bench main --before``: run each side in a fresh process, compare the two.

:func:`run_side` times one side in a child process; :func:`format_comparison` prints
the seconds per stage of both and their ratio; :func:`agreement` compares the two
results folders request by request.

Cells are matched by run name without its hash (the hash covers the settings that
differ). For selection cells: per selector, how many requests select the same version
(the top of ``ranked``), and for ChronoMem's selector which requests differ. For
generation cells: how many sample rows have the same prediction.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_HASH = re.compile(r"__[0-9a-f]{10}$")
SHOW = 20  # differing ChronoMem requests listed per cell


def load_averages() -> str:
    """The 1/5/15-minute load averages, for the report (the machine may be shared)."""
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def _stage_totals(rows: list[dict[str, Any]], stages: Sequence[str]) -> dict[str, float]:
    return {c: sum(r[c] for r in rows) for c in (*stages, "other", "total", "cpu")}


def format_comparison(before: dict[str, Any], after: dict[str, Any], stages: Sequence[str]) -> str:
    """Seconds per stage (``stages``), all cells together, before and after, and their ratio."""
    b, a = _stage_totals(before["cells"], stages), _stage_totals(after["cells"], stages)
    for key in ("wall", "process"):
        b[key], a[key] = before.get(key, 0.0), after.get(key, 0.0)
    lines = [f"{'stage':<10} {'before':>9} {'after':>9} {'after/before':>13}"]
    for c in (*stages, "other", "total", "cpu", "wall", "process"):
        ratio = f"{a[c] / b[c]:13.2f}" if b[c] > 0.05 else f"{'-':>13}"
        lines.append(f"{c:<10} {b[c]:9.1f} {a[c]:9.1f} {ratio}")
    return "\n".join(lines)


def run_side(args: argparse.Namespace, side: str, extra: list[str], tmp: str, results: str) -> int:
    """Time one side in a fresh process; its timings go to ``tmp/<side>.json``."""
    out = os.path.join(tmp, f"{side}.json")
    cmd = [sys.executable, "-m", "chronobench", "bench", "main", "--json-out", out]
    cmd += ["--results-dir", results]
    cmd += ["--experiment", args.experiment]
    if args.limit_streams:
        cmd += ["--limit-streams", str(args.limit_streams)]
    if args.warm:
        cmd.append("--warm")
    if args.cache_dir:
        cmd += ["--cache-dir", args.cache_dir]
    cmd += [*args.overrides, *extra]
    print(f"== {side}: {' '.join(extra) or 'as configured'} (load {load_averages()})", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        print(f"  {line}", end="", flush=True)
    if proc.wait() != 0:
        print(f"bench main: the {side} side failed (exit {proc.returncode})")
        return proc.returncode or 1
    with open(out, encoding="utf-8") as f:
        got = json.load(f)
    got["process"] = time.perf_counter() - t0
    with open(out, "w", encoding="utf-8") as f:
        json.dump(got, f)
    return 0


def _rows(run: Path) -> dict[str, dict[str, Any]]:
    path = run / "samples.jsonl"
    if not path.is_file():
        return {}
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    return {r["sample_id"]: r for r in rows if "sample_id" in r}


def _top(row: dict[str, Any]) -> Any:
    ranked = row.get("ranked") or []
    return ranked[0][0] if ranked else None


def _runs(folder: Path) -> dict[str, Path]:
    runs = folder / "runs"
    if not runs.is_dir():
        return {}
    return {_HASH.sub("", p.name): p for p in sorted(runs.iterdir()) if p.is_dir()}


def agreement(before: Path, after: Path, chronomem: str = "chronomem") -> list[str]:
    """Report lines comparing the runs under ``before`` and ``after`` (results folders)."""
    old, new = _runs(before), _runs(after)
    lines: list[str] = []
    for name in sorted(set(old) & set(new)):
        a, b = _rows(old[name]), _rows(new[name])
        common = sorted(set(a) & set(b))
        if not common:
            continue
        selection = [s for s in common if a[s].get("kind") == "selection"]
        if selection:
            same: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            differ = []
            for sid in selection:
                sel = str(a[sid].get("selector"))
                hit = _top(a[sid]) == _top(b[sid])
                same[sel][0] += hit
                same[sel][1] += 1
                if not hit and sel == chronomem:
                    differ.append(sid)
            cells = ", ".join(f"{s} {n}/{t}" for s, (n, t) in sorted(same.items()))
            lines.append(f"{name}: same selected version: {cells}")
            for sid in differ[:SHOW]:
                gold = a[sid].get("gold_version")
                lines.append(f"    {sid}: gold {gold}, before {_top(a[sid])}, after {_top(b[sid])}")
            if len(differ) > SHOW:
                lines.append(f"    ... and {len(differ) - SHOW} more")
        others = [s for s in common if a[s].get("kind") != "selection"]
        if others:
            n = sum(a[s].get("prediction") == b[s].get("prediction") for s in others)
            line = f"{name}: same prediction on {n}/{len(others)} rows"
            chosen = [s for s in others if "selected_version" in a[s]]
            if chosen:
                v = sum(a[s]["selected_version"] == b[s].get("selected_version") for s in chosen)
                line += f", same selected version on {v}/{len(chosen)}"
            lines.append(line)
    return lines
