"""RQ4's lines of the viewer's headline table: the held-out headline per row (a peer at
its best k, as on the board). Rows named ``floor_*`` are its floors, ``oracle_*`` its
ceiling."""

from __future__ import annotations

from chronobench.tracks.selective.board import row_label
from chronobench.viewer.collect import Build, ViewRun
from chronobench.viewer.summary import Row, Stat, newest


def headline_rows(build: Build) -> list[Row]:
    latest: dict[str, ViewRun] = {}
    for r in newest(x for x in build.runs if x.kind == "selective"):
        name = str((r.metrics.get("rq4") or {}).get("row") or r.system)
        latest[name] = r
    rows = []
    for name, r in sorted(latest.items()):
        user = (r.metrics.get("rq4") or {}).get("user") or {}
        st = Stat.of(user.get("headline"))
        if st is None:
            continue
        floor, oracle = name.startswith("floor_"), name.startswith("oracle_")
        rows.append(Row("RQ4 selective forgetting (held-out)", row_label(name), st, None,
                        r.run_id, floor, oracle))  # fmt: skip
    floors = [r for r in rows if r.is_floor and r.stat and r.stat.mean is not None]
    best = max(floors, key=lambda r: r.stat.mean or 0.0) if floors else None  # type: ignore[union-attr]
    if best is None or best.stat is None:
        return rows
    return [
        r
        if r.is_floor
        else Row(
            r.section, r.label, r.stat, (best.label, best.stat), r.run_id, r.is_floor, r.is_oracle
        )  # fmt: skip
        for r in rows
    ]
