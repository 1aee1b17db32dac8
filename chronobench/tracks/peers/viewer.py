"""The memory-systems track's part of the viewer: its lines of the headline table (each
system's own R@1 and RC-QA), its plot (each system's restore fidelity) and its blocks of
a run's page."""

from __future__ import annotations

from typing import Any

from chronobench.tracks.peers.board import peer_label
from chronobench.viewer.collect import Build
from chronobench.viewer.summary import Row, Stat, newest

#: The restore-fidelity measures, in the plot's order (each a share of the gold v*).
FIDELITY = ("exact", "missing", "extra", "stale", "leaked")


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


def peer_fidelity(build: Build) -> list[tuple[str, list[float | None]]]:
    """Per memory system, its restore fidelity (:data:`FIDELITY`, %)."""
    out = []
    for r in newest(x for x in build.runs if x.kind == "peers"):
        fid = (r.metrics.get("peer") or {}).get("fidelity") or {}
        out.append((peer_label(str(r.system)), [fid.get(k) for k in FIDELITY]))
    return sorted(out)


def fidelity_plots(build: Build) -> list[str]:
    from chronobench.viewer import svg

    fid = peer_fidelity(build)
    if not fid:
        return []
    return [svg.grouped_bars("Memory systems: restore fidelity at the gold v* (%)", fid, FIDELITY)]


def run_details(metrics: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A peer run's own blocks: its own targeting and its restore fidelity."""
    peer = metrics.get("peer")
    if not peer:
        return []
    return [
        ("memory system: own targeting", peer.get("own_target") or {}),
        ("memory system: restore fidelity", peer.get("fidelity") or {}),
    ]
