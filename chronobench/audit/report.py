"""Run audits, write their files and the Markdown table the board links to."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from chronobench.audit.contract import ATTACK_FAMILIES, HeadlineAudit
from chronobench.audit.registry import AUDITS, AuditOptions
from chronobench.fileio import atomic_write_text

__all__ = [
    "audit_table",
    "load_audits",
    "run_audits",
    "split_note",
    "summary_table",
    "write_audits",
]


def run_audits(tracks: Sequence[str] | None, options: AuditOptions) -> list[HeadlineAudit]:
    """Every headline audit of ``tracks`` (None: every registered track), in order."""
    names = list(tracks) if tracks else list(AUDITS.names())
    out: list[HeadlineAudit] = []
    for name in names:
        entry = AUDITS.entry(name)
        entry.check_available()
        out.extend(entry.load()(options))
    return out


def write_audits(audits: Iterable[HeadlineAudit], folder: Path) -> list[Path]:
    """One JSON file per track (its headlines in order) plus ``AUDIT.md`` beside the
    folder; each written whole through a temporary file."""
    by_track: dict[str, list[HeadlineAudit]] = {}
    for audit in audits:
        by_track.setdefault(audit.track, []).append(audit)
    written = []
    for track, items in by_track.items():
        payload = [a.model_dump(mode="json") for a in items]
        text = json.dumps(payload, indent=1, sort_keys=True) + "\n"
        written.append(atomic_write_text(folder / f"{track}.json", text))
    every = load_audits(folder)
    written.append(atomic_write_text(folder.parent / "AUDIT.md", audit_table(every)))
    return written


def load_audits(folder: Path) -> list[HeadlineAudit]:
    """Every audit file in ``folder``, in track order (empty when there is none)."""
    out: list[HeadlineAudit] = []
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.json")):
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
            out.extend(HeadlineAudit.model_validate(item) for item in items)
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"{path}: not an audit file ({exc}); rerun `chronobench audit`"
            ) from exc
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def summary_table(audits: Sequence[HeadlineAudit], *, named: bool = False) -> list[str]:
    """The one-row-per-headline table (Markdown lines): oracle, the system's interval,
    the best attack of each family (``named``: with its name), whether every curve
    falls, the verdict. AUDIT.md and the board's audit section both show it."""
    families = list(ATTACK_FAMILIES)
    lines = [
        "| track | headline | oracle | system [95% CI] | "
        + " | ".join(f"best {f.replace('_', '-')}" for f in families)
        + " | curves fall | verdict |",
        "|---" * (6 + len(families)) + "|",
    ]
    for a in audits:
        best = a.best_attacks()
        cells = [
            (f"{_pct(best[f].score)} ({best[f].name})" if named else _pct(best[f].score))
            if f in best
            else "n/a"
            for f in families
        ]
        falls = bool(a.curves) and all(c.strictly_decreasing() for c in a.curves)
        lines.append(
            f"| {a.track} | {a.headline} | {_pct(a.oracle)} | {a.system} "
            f"{_pct(a.interval.mean)} [{_pct(a.interval.lo)}, {_pct(a.interval.hi)}] | "
            + " | ".join(cells)
            + f" | {'yes' if falls else 'NO'} | {a.verdict()} |"
        )
    return lines


def audit_table(audits: Sequence[HeadlineAudit]) -> str:
    """``AUDIT.md``: per headline, the oracle, each curve, the best attack per family."""
    lines = [
        "# Validity audit",
        "",
        "Written by `python -m chronobench audit` (docs/audit.md). Each headline declares "
        "its oracle (the ceiling), error curves (the oracle plus k wrong actions of the "
        "track's kind: the score must fall strictly as k grows; the slope is headline "
        "points per wrong action) and attack families (policies that skip the task); the "
        "best attack of each family must stay below the oracle and below the lower end of "
        "the system's 95% interval. Figures x100.",
        *split_note(audits),
        "",
        *summary_table(audits, named=True),
    ]
    for a in audits:
        lines += ["", f"## {a.track}: {a.headline}", "", f"Data: {a.data}.", "",
                  f"Oracle: {a.oracle_name}, {_pct(a.oracle)}. Why it is the ceiling: "
                  f"{a.oracle_why}", "", "Error curves (k: score):", ""]  # fmt: skip
        for c in a.curves:
            pts = ", ".join(f"{k}: {_pct(s)}" for k, s in sorted(c.points))
            lines.append(f"- {c.name} (one wrong action: {c.action}): {pts}; slope "
                         f"{100 * c.slope():+.2f} per action")  # fmt: skip
        lines += ["", "Attacks:", "", "| family | attack | score | note |", "|---|---|---|---|"]
        for atk in sorted(a.attacks, key=lambda x: (x.family, -x.score, x.name)):
            lines.append(f"| {atk.family} | {atk.name} | {_pct(atk.score)} | {atk.note} |")
        for family, why in sorted(a.not_applicable.items()):
            lines.append(f"| {family} | not applicable | | {why} |")
        if a.baselines:
            lines += ["", "Baselines (competitors that do the task by other means; compared, "
                      "not attacks):", "",
                      f"| baseline | score | {a.system.split(' (')[0]} minus it, paired "
                      "[95% CI] | cases higher / lower | note |", "|---|---|---|---|---|"]  # fmt: skip
            for b in sorted(a.baselines, key=lambda x: (-x.score, x.name)):
                m = b.margin
                margin = (f"{100 * m.mean:+.1f} [{100 * m.lo:+.1f}, {100 * m.hi:+.1f}]"
                          if m is not None else "unpaired")  # fmt: skip
                lines.append(f"| {b.name} | {_pct(b.score)} | {margin} | "
                             f"{b.better} / {b.worse} | {b.note} |")  # fmt: skip
        for note in a.notes:
            lines += ["", note]
        if a.control:
            lines += ["", f"Control set, not a headline: {a.control}"]
        failures = a.failures()
        lines += ["", "Verdict: " + ("passes." if not failures else "FAILS:")]
        lines += [f"- {f}" for f in failures]
        if a.baselines:
            lines += ["", f"Against the baselines (not part of the verdict): {a.comparison()}"]
    return "\n".join(lines) + "\n"


def split_note(audits: Sequence[HeadlineAudit]) -> list[str]:
    """The paragraph on baselines and controls, only when some headline has them (the
    tracks without either keep their text unchanged)."""
    if not any(a.baselines or a.control for a in audits):
        return []
    return [
        "",
        "The verdict certifies the metric. A *baseline* does the task by other means (the "
        "repair track's graph-free planners): whether the system beats the strongest one is "
        'stated beside the verdict ("does not beat ..." / "beats every baseline"), not '
        "folded into it. A *control* row is a published control set, not a headline: its "
        "verdict is shown as measured and `chronobench audit` does not exit 1 on it.",
    ]
