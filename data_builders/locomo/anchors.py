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
from data_builders.locomo.source import parse_evidence
from data_builders.locomo.streams import StreamBuild
from data_builders.probes import ProbePool
from data_builders.queries import Anchor
from data_builders.uniqueness import AnnotationIndex, session_of


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


def annotation_indexes(
    rec: dict[str, Any], sb: StreamBuild
) -> dict[str, tuple[AnnotationIndex, Callable[[Anchor], set[str]]]]:
    """LoCoMo's annotations per episode, by anchor scope: whole sessions (keyed ``s<n>``
    like :attr:`Anchor.group`) and, at turn or observation granularity, single dialogue
    turns (keyed by dia id) for message anchors.

    Records: ``event_summary`` lines (their session), ``observation`` records (their
    session and cited turns) and ``qa`` questions (the sessions and turns their evidence
    cites). At observation granularity observations are what systems index, so they are
    left out there: the filter never judges an anchor by the indexed text.
    """
    gran = sb.stream.granularity
    sessions, turns = AnnotationIndex(), AnnotationIndex()
    for n in sorted(sb.spans):
        sessions.records.setdefault(f"s{n}", [])
        for ev in session_events(rec, n)[1]:
            sessions.add([f"s{n}"], ev)
        if gran == "observation":
            continue
        block = (rec.get("observation") or {}).get(f"session_{n}_observation") or {}
        for obs in block.values():
            for r in obs or []:
                if isinstance(r, list) and len(r) == 2 and isinstance(r[0], str):
                    ids, _ = parse_evidence(r[1] if isinstance(r[1], list) else [r[1]])
                    sessions.add([f"s{n}"], r[0])
                    turns.add(ids, r[0])
    for qa in rec.get("qa") or []:
        ids, _ = parse_evidence(qa.get("evidence") or [])
        text = str(qa.get("question", ""))
        sessions.add([f"s{k}" for i in ids if (k := session_of(i)) in sb.spans], text)
        turns.add(ids, text)
    # Rarity is judged among sessions for both scopes: a word in every session weighs 0.
    sessions.weigh(sessions.records)
    turns.weights = sessions.weights
    out: dict[str, tuple[AnnotationIndex, Callable[[Anchor], set[str]]]] = {
        "session": (sessions, lambda a: {a.group})
    }
    if gran != "session":
        writes = sb.stream.writes
        out["write"] = (turns, lambda a: set(writes[a.anchor_version - 1].labels["dialog_ids"]))
    return out


def indexed_text(sb: StreamBuild) -> str:
    """Everything systems index in this stream (for the verbatim leakage guard)."""
    return "\n".join(op.text or "" for w in sb.stream.writes for op in w.ops)
