"""The board's audit section: every headline beside its validity audit.

Read from ``results/audit/*.json`` (written by ``python -m chronobench audit``); a board
built before any audit ran says so instead of showing nothing.
"""

from __future__ import annotations

from pathlib import Path

from chronobench.audit.report import load_audits, split_note, summary_table

__all__ = ["audit_section"]


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
    lines += summary_table(audits)
    lines += split_note(audits)
    compared = [a for a in audits if a.baselines]
    if compared:
        lines += ["", "Each headline against its strongest baseline, in one sentence:", ""]
        lines += [f"- {a.track}, {a.headline}: {a.comparison()}" for a in compared]
    return "\n".join(lines) + "\n"
