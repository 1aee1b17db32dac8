"""The board's audit section: every headline beside its validity audit.

Read from ``results/audit/*.json`` (written by ``python -m chronobench audit``); a board
built before any audit ran says so instead of showing nothing.
"""

from __future__ import annotations

from pathlib import Path

from chronobench.audit.contract import ATTACK_FAMILIES
from chronobench.audit.report import load_audits

__all__ = ["audit_section"]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def audit_section(folder: Path) -> str:
    """Markdown: one row per audited headline (oracle, the system's interval, the best
    attack of each family, whether every error curve falls, the verdict)."""
    audits = load_audits(folder)
    lines = [
        "## Validity audit of every headline",
        "",
        "A headline is evidence of the task only if its oracle is the ceiling, every wrong "
        "action lowers it (error curves) and no policy that skips the task reaches the "
        "system's interval (attack families). `python -m chronobench audit` checks each "
        "contract; curves, attacks and reasons are in [AUDIT.md](AUDIT.md), the contract "
        "in [docs/audit.md](../docs/audit.md).",
        "",
    ]
    if not audits:
        return "\n".join([*lines, "No audit has been run for this board.", ""])
    families = list(ATTACK_FAMILIES)
    lines += [
        "| track | headline | oracle | system [95% CI] | "
        + " | ".join(f"best {f.replace('_', '-')}" for f in families)
        + " | curves fall | verdict |",
        "|---" * (6 + len(families)) + "|",
    ]
    for a in audits:
        best = a.best_attacks()
        cells = [_pct(best[f].score) if f in best else "n/a" for f in families]
        falls = bool(a.curves) and all(c.strictly_decreasing() for c in a.curves)
        lines.append(
            f"| {a.track} | {a.headline} | {_pct(a.oracle)} | {a.system} "
            f"{_pct(a.interval.mean)} [{_pct(a.interval.lo)}, {_pct(a.interval.hi)}] | "
            + " | ".join(cells)
            + f" | {'yes' if falls else 'NO'} | {'passes' if a.passes else 'FAILS'} |"
        )
    return "\n".join(lines) + "\n"
