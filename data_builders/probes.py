"""Attaching probes to a rollback query at any ``v*`` from a stream's pool.

The pool models live in :mod:`data_builders.pools` (re-exported here) and the boundary
probes in :mod:`data_builders.boundary`; this module assembles a query's probes, the
summary probe, and the ``final_qa`` probes asked at the stream's last version.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from chronobench.data.schema import Probe, Stream
from chronobench.metrics.summary import SUMMARY_WORDS, novel_event_words, session_new_words
from data_builders.boundary import boundary_windows, recall_question
from data_builders.pools import (
    FUTURE_CATEGORIES,
    PoolConflict,
    PoolFact,
    PoolQA,
    PoolSession,
    ProbePool,
    past_text,
)

__all__ = [
    "FUTURE_CATEGORIES",
    "SUMMARY_QUESTION",
    "PoolConflict",
    "PoolFact",
    "PoolQA",
    "PoolSession",
    "ProbePool",
    "add_final_probes",
    "attach_probes",
    "boundary_windows",
    "budget_question",
    "past_text",
    "recall_question",
]

SUMMARY_QUESTION = "Summarise what has happened so far."


def budget_question(words: int = SUMMARY_WORDS) -> str:
    """The LoCoMo summary request, with its word budget stated (every RQ3 score reads
    only the first ``words`` words of the answer)."""
    return f"Summarise what has happened so far in at most {words} words."


def summary_probe(
    query_id: str, pool: ProbePool, stream: Stream, v_star: int, question: str
) -> Probe | None:
    """The summary probe at ``v*`` (its reference: the events up to v*), asked as
    ``question`` (the battery's text); None when nothing is committed by then."""
    if pool.summary_reference is not None:
        return Probe(
            probe_id=f"{query_id}/summary",
            kind="summary",
            question=question,
            reference=pool.summary_reference,
            scoring=pool.scoring,
            meta={"caveat": pool.summary_caveat} if pool.summary_caveat else {},
        )
    done = [s for s in pool.sessions if s.last_version <= v_star and s.events]
    if not done:
        return None  # nothing committed yet: no reference to score against
    reference = "\n".join(f"{s.date}: {' '.join(s.events)}" for s in done)
    future = [e for s in pool.sessions if s.first_version > v_star for e in s.events]
    memory = " ".join(op.text or "" for w in stream.writes[:v_star] for op in w.ops)
    floors = {"session_dates": "\n".join(s.date for s in done if s.date)}
    if pool.generic_floor:
        floors["generic_words"] = pool.generic_floor
    new_words = _session_new_words(pool, stream)
    return Probe(
        probe_id=f"{query_id}/summary",
        kind="summary",
        question=question,
        reference=reference,
        future_references=future,
        scoring=pool.scoring,
        meta={
            "sessions": [s.session for s in done],
            "speakers": list(pool.speakers),
            "word_budget": SUMMARY_WORDS,
            # RQ3 headline (session coverage): per restored session, the words of its
            # events that the conversation says first in that session.
            "session_words": [new_words[s.session] for s in done if s.session in new_words],
            # Calibrated leakage (docs/metrics.md): per eligible post-v* event, its
            # content stems found neither in the memory up to v* nor in the reference.
            "novel_words": novel_event_words(future, f"{memory}\n{reference}", pool.speakers),
            # Content-free outputs the RQ3 floor rows replay (floor_text system).
            "floor_texts": floors,
        },
    )


def _session_new_words(pool: ProbePool, stream: Stream) -> dict[int, list[str]]:
    memory = tuple(
        (int(w.labels.get("session", 0)), " ".join(op.text or "" for op in w.ops))
        for w in stream.writes
    )
    events = tuple((s.session, tuple(s.events)) for s in pool.sessions)
    return _new_words_cached(events, memory, tuple(pool.speakers))


@lru_cache(maxsize=4)
def _new_words_cached(
    events: tuple[tuple[int, tuple[str, ...]], ...],
    memory: tuple[tuple[int, str], ...],
    names: tuple[str, ...],
) -> dict[int, list[str]]:
    # Memoised: every query of a stream needs the same table (callers do not mutate it).
    return session_new_words(events, memory, names)


def attach_probes(
    pool: ProbePool,
    stream: Stream,
    query_id: str,
    v_star: int,
    *,
    exclude_qa: frozenset[str] = frozenset(),
    prefer_qa: frozenset[str] = frozenset(),
    stats: Counter[str] | None = None,
) -> list[Probe]:
    """The scored probes of a query at ``v*``: the stream's battery labelled for that
    v* (:func:`data_builders.battery.label_probes`). Every query of the stream is asked
    the whole battery; these are the ones that count for it, and how."""
    from data_builders.battery import label_probes

    return label_probes(
        pool, stream, query_id, v_star, exclude_qa=exclude_qa, prefer_qa=prefer_qa, stats=stats
    )


def _count(stats: Counter[str] | None, key: str) -> None:
    if stats is not None:
        stats[key] += 1


def add_final_probes(
    queries: Iterable[Any], pools: Iterable[ProbePool], streams: Iterable[Stream]
) -> int:
    """Give each stream its ``final_qa`` probes (:func:`data_builders.battery.final_probes`:
    the battery asked once at the stream's last version, no rollback), attached to the
    stream's first query by ``query_id``; the runner asks them in one session after all
    of the stream's queries. Returns the number added."""
    from data_builders.battery import final_probes

    by_pool = {p.stream_id: p for p in pools}
    by_stream = {s.stream_id: s for s in streams}
    first: dict[str, Any] = {}
    for q in sorted(queries, key=lambda q: q.query_id):
        first.setdefault(q.stream_id, q)
    added = 0
    for sid, q in first.items():
        if sid not in by_pool or sid not in by_stream:
            continue
        extra = final_probes(by_pool[sid], by_stream[sid], q.query_id)
        q.probes.extend(extra)
        added += len(extra)
    return added
