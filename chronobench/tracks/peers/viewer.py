"""The memory-systems track's lines of the viewer's headline table: each system's own
R@1 and RC-QA."""

from __future__ import annotations

from chronobench.tracks.peers.board import peer_label
from chronobench.viewer.collect import Build
from chronobench.viewer.summary import Row, Stat, newest


def headline_rows(build: Build) -> list[Row]:
    rows = []
    for r in newest(x for x in build.runs if x.kind == "peers"):
        peer = r.metrics.get("peer") or {}
        own = peer.get("own_target") or {}
        rc = Stat.of(((r.metrics.get("probes") or {}).get("all") or {}).get("rc_qa"))
        label = peer_label(str(r.system))
        if own.get("recall_at_1") is not None:
            rows.append(
                Row(
                    "Memory systems: own R@1", label, Stat(100 * own["recall_at_1"], n=own.get("n"))
                )
            )
        if rc is not None:
            rows.append(Row("Memory systems: own RC-QA", label, rc, run_id=r.run_id))
    rows.sort(key=lambda r: (r.section, r.label))
    return rows
