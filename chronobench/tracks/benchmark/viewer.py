"""The benchmark's lines of the viewer's headline table: RQ1 R@1 per selector, RQ2 RC-QA
and RQ3 last-session coverage per system, each beside its best floor."""

from __future__ import annotations

from chronobench.viewer.collect import Build
from chronobench.viewer.summary import (
    RQ1_SETS,
    Row,
    Stat,
    generation_runs,
    is_floor,
    is_oracle,
    ordered_selectors,
    ordered_systems,
    selection_sets,
    selector_label,
    system_label,
)


def headline_rows(build: Build) -> list[Row]:
    """RQ1, then RQ2, then RQ3 (the questions' order)."""
    return [
        *_rq1_rows(build),
        *_probe_rows(build, "RQ2 RC-QA", "rc_qa"),
        *_probe_rows(build, "RQ3 last-session coverage", "last_session_coverage"),
    ]


def _probe_rows(build: Build, section: str, metric: str) -> list[Row]:
    runs = generation_runs(build)
    stats = {
        s: Stat.of(((r.metrics.get("probes") or {}).get("all") or {}).get(metric))
        for s, r in runs.items()
    }
    floors = [(s, st) for s, st in stats.items() if is_floor(s) and st and st.mean is not None]
    best = max(floors, key=lambda x: x[1].mean or 0.0) if floors else None
    floor = (system_label(best[0]), best[1]) if best else None
    rows = []
    for s in ordered_systems(stats):
        if stats[s] is None:
            continue
        rows.append(
            Row(
                section,
                system_label(s),
                stats[s],
                None if is_floor(s) else floor,
                runs[s].run_id,
                is_floor(s),
                is_oracle(s),
            )
        )
    return rows


def _rq1_rows(build: Build) -> list[Row]:
    sets = selection_sets(build)
    for name in RQ1_SETS:
        grans = sorted(g for q, g in sets if q == name)
        if grans:
            break
    else:
        if not sets:
            return []
        name = sorted(sets)[0][0]
        grans = sorted(g for q, g in sets if q == name)
    rows = []
    for g in sorted(grans, key=lambda g: (g != "session", g)):
        sel = sets[(name, g)]
        for s in ordered_selectors(sel) if sel else []:
            st = Stat.of(((sel[s] or {}).get("all") or {}).get("recall_at_1"))
            rows.append(Row(f"RQ1 R@1 ({name}, {g})", selector_label(s), st))
    return rows
