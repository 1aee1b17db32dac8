"""The repair track's lines of the viewer's headline table: recovery per method, per case
set and backbone, beside the best text heuristic (the track's floors, docs/repair.md)."""

from __future__ import annotations

from chronobench.tracks.repair.methods import LABELS
from chronobench.tracks.repair.methods import is_floor as repair_floor
from chronobench.tracks.repair.report import load_repair_runs
from chronobench.viewer.collect import Build
from chronobench.viewer.summary import Row, Stat


def headline_rows(build: Build) -> list[Row]:
    runs = [r.folder for r in build.runs if r.kind == "repair"]
    if not runs:
        return []
    found = load_repair_runs(runs)
    order = {m: i for i, m in enumerate(LABELS)}
    rows: dict[str, list[Row]] = {}
    for (backbone, subset, method, cond), block in sorted(
        found.items(), key=lambda kv: (kv[0][1], kv[0][0], order.get(kv[0][2], 99), kv[0])
    ):
        if cond:
            continue  # a noise, diagnosis or retention condition: the board's details
        st = Stat.of((block["metrics"].get("all") or {}).get("recovery"))
        section = f"Repair recovery ({subset} set, {backbone})"
        floor = repair_floor(method)
        label = LABELS.get(method, method).strip()
        rows.setdefault(section, []).append(Row(section, label, st, None, block["run_id"], floor))
    out = []
    for items in rows.values():
        floors = [r for r in items if r.is_floor and r.stat and r.stat.mean is not None]
        best = max(floors, key=lambda r: r.stat.mean or 0.0) if floors else None
        for r in items:
            f = (best.label, best.stat) if best and not r.is_floor and best.stat else None
            out.append(Row(r.section, r.label, r.stat, f, r.run_id, r.is_floor))
    return out
