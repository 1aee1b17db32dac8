"""LoCoMo anchors: annotated events (session scope) and QA questions (evidence scope).

Anchor phrases come from ``event_summary`` and ``qa.question`` only; neither field is
indexed, which is the leakage guard (see data_builders/README.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from data_builders.grammar import question_descriptor
from data_builders.locomo.pool import session_events
from data_builders.locomo.streams import StreamBuild
from data_builders.probes import ProbePool
from data_builders.queries import Anchor
from data_builders.uniqueness import Episode, EpisodeIndex


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


def episode_indexes(sb: StreamBuild) -> dict[str, tuple[EpisodeIndex, Callable[[Anchor], str]]]:
    """BM25 indexes over what systems see, by anchor scope: whole sessions (for session
    anchors, keyed ``s<n>`` like :attr:`Anchor.group`) and single writes (for message
    anchors at turn or observation granularity, keyed ``v<version>``)."""
    writes = sb.stream.writes

    def text(first: int, last: int) -> str:
        return "\n".join(op.text or "" for w in writes[first - 1 : last] for op in w.ops)

    sessions = [Episode(f"s{n}", text(a, b)) for n, (a, b) in sorted(sb.spans.items())]
    out: dict[str, tuple[EpisodeIndex, Callable[[Anchor], str]]] = {
        "session": (EpisodeIndex(sessions), lambda a: a.group)
    }
    if sb.stream.granularity != "session":
        single = [Episode(f"v{w.version}", text(w.version, w.version)) for w in writes]
        out["write"] = (EpisodeIndex(single), lambda a: f"v{a.anchor_version}")
    return out
