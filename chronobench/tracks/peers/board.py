"""The leaderboard's "memory systems" section: runs of ``task=peers``.

One row per memory system (ChronoMem and every peer adapter, one interface and one
reader), the newest published run of each; both measurements side by side: its own
targeting (R@1 over every request, RQ2 after its own rollback) and the oracle target
(restore fidelity against the gold state at v*). Latency and bytes per write are not
here (they vary between reruns): see the run manifests' ``timings`` and docs/peers.md.
"""

from __future__ import annotations

import textwrap
from typing import Any


def peer_label(name: str) -> str:
    from chronobench.systems.peers import peer_spec

    try:
        return peer_spec(name).label or name
    except KeyError:
        return name


def _order(name: str) -> tuple[bool, float, str]:
    from chronobench.systems.peers import PEER_MEMORIES

    return PEER_MEMORIES.sort_key(name)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.1f}"


def peers_section(runs: list[Any]) -> tuple[str, list[str]]:
    """Markdown of the memory-systems table and the run ids it names."""
    newest: dict[str, Any] = {}
    for r in runs:
        if r.system and (r.system not in newest or r.finished_at >= newest[r.system].finished_at):
            newest[r.system] = r
    if not newest:
        return "", []
    rows = []
    for name in sorted(newest, key=_order):
        m = newest[name].metrics
        peer = m.peer or {}
        rb = peer.get("rollback") or {}
        how = "native" if rb.get("native") else "**emulated** by the adapter"
        own = peer.get("own_target") or {}
        rc = m.probes.all.get("rc_qa") if m.probes is not None else None
        fid = peer.get("fidelity") or {}
        rq2 = "–"
        if rc is not None and rc.mean is not None:
            rq2 = (
                f"{100 * rc.mean:.1f} [{100 * (rc.ci_low or 0):.1f}, {100 * (rc.ci_high or 0):.1f}]"
            )
            rq2 += f" (n={peer.get('rq2_queries')})"
        rows.append(
            [
                peer_label(name),
                how,
                f"{100 * own.get('recall_at_1', 0):.1f} (n={own.get('n', 0)})",
                rq2,
                *(_pct(fid.get(k)) for k in ("exact", "missing", "extra", "stale", "leaked")),
                _pct(fid.get("on_disk")),
                str(int(fid.get("rollbacks", 0))),
            ]
        )
    header = [
        "memory system",
        "rollback",
        "own R@1",
        "own RC-QA",
        "exact",
        "missing",
        "extra",
        "stale",
        "leaked",
        "on disk",
        "n",
    ]
    streams = {(newest[n].metrics.peer or {}).get("streams") for n in newest}
    intro = (
        "The memory systems agent builders use, through their adapters "
        "(chronobench/systems/peers/, docs/peers.md), beside ChronoMem under the same "
        f"interface, on the first {', '.join(str(s) for s in sorted(streams, key=str))} "
        "conversations (`python -m chronobench run experiment=peers`). *Own targeting*: "
        "the system's own search locates the described write (R@1 over every request, "
        "x100), then it rolls back its own way and the extractive reader answers (RC-QA "
        "x100 [95% CI], n = requests rolled back; fewer for slow rollbacks, see the "
        "preset). *Oracle target*: rolled back its own way to the true v*, its state "
        "against the gold state at v*: exact = share of rollbacks with nothing missing, "
        "extra or stale; missing, extra, stale per gold item; leaked = probed discarded "
        "items its search still returns; on disk = probed discarded texts still in its "
        "files; n = rollbacks. An **emulated** rollback is the adapter's, not the "
        "system's. Rollback latency and bytes per write (1k and 10k writes) vary between "
        "runs and are not in this file: `python -m chronobench bench peers` and docs/peers.md."
    )
    lines = [
        "## Memory systems (LoCoMo session granularity, one reader)",
        "",
        *textwrap.wrap(intro, width=88, break_on_hyphens=False),
        "",
    ]
    table = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    ids = [newest[n].run_id for n in sorted(newest, key=_order)]
    lines += [*table, "", "Runs: " + ", ".join(f"`{i}`" for i in ids), ""]
    return "\n".join(lines), ids
