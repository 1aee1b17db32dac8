"""LoCoMo anchors: annotated events (session scope) and QA questions (evidence scope).

Anchor phrases come from ``event_summary`` and ``qa.question`` only; neither field is
indexed, which is the leakage guard (see data_builders/README.md).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from data_builders.grammar import question_descriptor
from data_builders.locomo.pool import session_events
from data_builders.locomo.streams import StreamBuild
from data_builders.probes import ProbePool
from data_builders.queries import Anchor


def event_anchors(rec: dict[str, Any], sb: StreamBuild) -> list[Anchor]:
    """One anchor per annotated event; its target is the session's boundary."""
    out: list[Anchor] = []
    for n, (first, last) in sorted(sb.spans.items()):
        _, events = session_events(rec, n)
        for k, ev in enumerate(events):
            out.append(
                Anchor(
                    anchor_id=f"ev-s{n}-{k}",
                    kind="event",
                    text=ev,
                    phrase=ev.rstrip(". "),
                    form="clause",
                    scope="session",
                    group=f"s{n}",
                    anchor_version=last,
                    restore_version=last,
                    undo_version=first - 1,
                )
            )
    return out


def qa_anchors(
    pool: ProbePool, sb: StreamBuild, granularity: str
) -> tuple[list[Anchor], Counter[str]]:
    """Anchors phrased from QA questions whose evidence sits in a single write."""
    drops: Counter[str] = Counter()
    out: list[Anchor] = []
    session_of = {v: n for n, (a, b) in sb.spans.items() for v in range(a, b + 1)}
    for qa in pool.qas:
        if qa.category == 5:
            drops["qa:adversarial_premise"] += 1
            continue
        if qa.lo != qa.hi:
            drops["qa:evidence_spans_writes"] += 1
            continue
        desc = question_descriptor(qa.question)
        if desc is None:
            drops["qa:unphrasable"] += 1
            continue
        form, phrase = desc
        out.append(
            Anchor(
                anchor_id=f"qa-{qa.qa_id}",
                kind="qa",
                text=qa.question,
                phrase=phrase,
                form=form,
                scope="session" if granularity == "session" else "write",
                group=f"s{session_of[qa.hi]}",
                anchor_version=qa.hi,
                restore_version=qa.hi,
                undo_version=qa.lo - 1,
                exclude_qa=frozenset({qa.qa_id}),
            )
        )
    return out, drops
