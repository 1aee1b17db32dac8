"""The board's audit: a table of every headline at the top, and one line in each
headline's own section.

Read from ``results/audit/*.json`` (written by ``python -m chronobench audit``); a board
built before any audit ran says so instead of showing nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from chronobench.audit.contract import ATTACK_FAMILIES, HeadlineAudit
from chronobench.audit.report import load_audits, split_note, summary_table

__all__ = ["HEADLINE_SECTIONS", "audit_anchor", "audit_line", "audit_section", "with_audit_lines"]

#: Track -> the start of the board heading whose section shows that track's headline.
#: The audit line goes right under it, so a reader of the figure reads its audit too.
#: A track not named here (a plug-in's, until it adds itself) is audited in the table at
#: the top only; a control set (not a headline) never gets a line.
HEADLINE_SECTIONS: dict[str, str] = {
    "rq1": "## RQ1 headline:",
    "rq2": "### RQ2: rollback-consistent QA, RC-QA",
    "rq3": "### RQ3: rollback-consistent summarisation, last-session coverage",
    "rq4": "## RQ4: selective forgetting",
    "repair_retrieval": "### Sets where retrieval decides what a session reads",
}


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


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _slug(heading: str) -> str:
    # GitHub's rule for heading anchors: lower case, punctuation other than "-" and "_"
    # dropped, each space a hyphen.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def audit_anchor(audits: Sequence[HeadlineAudit], index: int) -> str:
    """The anchor of ``audits[index]``'s section in ``AUDIT.md`` (whose headings are
    the title, then ``track: headline`` in this order; a repeated heading's anchor gets
    GitHub's ``-1``, ``-2`` suffix)."""
    seen: dict[str, int] = {_slug("Validity audit"): 1}
    anchor = ""
    for i, a in enumerate(audits[: index + 1]):
        base = _slug(f"{a.track}: {a.headline}")
        count = seen.get(base, 0)
        seen[base] = count + 1
        if i == index:
            anchor = base if count == 0 else f"{base}-{count}"
    return anchor


def audit_line(audit: HeadlineAudit, anchor: str) -> str:
    """One line: the oracle, whether every error curve falls and its slope, the best
    attack of each family against the system's interval, the verdict."""
    falling = [c for c in audit.curves if c.strictly_decreasing()]
    slopes = ", ".join(f"{c.name} {100 * c.slope():+.2f}" for c in audit.curves)
    if audit.curves and len(falling) == len(audit.curves):
        curves = f"curves fall (slope per wrong action: {slopes})"
    elif audit.curves:
        rising = ", ".join(c.name for c in audit.curves if c not in falling)
        curves = f"curves do NOT all fall ({rising}; slope per wrong action: {slopes})"
    else:
        curves = "no error curve"
    best = audit.best_attacks()
    attacks = ", ".join(
        f"{family.replace('_', '-')} {_pct(best[family].score)} ({best[family].name})"
        if family in best
        else f"{family.replace('_', '-')} n/a"
        for family in ATTACK_FAMILIES
    )
    iv = audit.interval
    return (
        f"Audit of {audit.headline} ([AUDIT.md](AUDIT.md#{anchor})): oracle "
        f"{_pct(audit.oracle)}; {curves}; best attack per family: {attacks}, against "
        f"{audit.system} {_pct(iv.mean)} [{_pct(iv.lo)}, {_pct(iv.hi)}]; verdict "
        f"{audit.verdict()}."
    )


def with_audit_lines(md: str, folder: Path) -> str:
    """``md`` with each headline's audit line (:func:`audit_line`) under the heading
    :data:`HEADLINE_SECTIONS` names for its track; a heading the board lacks is
    skipped (a board built from some tracks only)."""
    audits = load_audits(folder)
    by_heading: dict[str, list[str]] = {}
    for i, audit in enumerate(audits):
        heading = HEADLINE_SECTIONS.get(audit.track)
        if heading and not audit.control:
            by_heading.setdefault(heading, []).append(audit_line(audit, audit_anchor(audits, i)))
    lines = md.split("\n")
    for heading, added in by_heading.items():
        at = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
        if at is None:
            continue
        # The heading, a blank line, the audit lines (a paragraph each), then the section.
        block = [""] + [x for line in added for x in (line, "")]
        if at + 1 < len(lines) and lines[at + 1] == "":
            block = block[:-1]
        lines[at + 1 : at + 1] = block
    return "\n".join(lines)
