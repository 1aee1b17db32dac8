"""The summary request and its probe at any ``v*`` (RQ3; docs/metrics.md)."""

from __future__ import annotations

from functools import lru_cache

from chronobench.data.schema import Probe, Stream
from chronobench.metrics.summary import (
    SUMMARY_WORDS,
    last_session_words,
    novel_event_words,
    session_new_words,
)
from data_builders.pools import ProbePool

SUMMARY_QUESTION = "Summarise what has happened so far."


def budget_question(words: int = SUMMARY_WORDS) -> str:
    """The LoCoMo summary request, with its word budget stated (every RQ3 score reads
    only the first ``words`` words of the answer)."""
    return f"Summarise what has happened so far in at most {words} words."


def summary_probe(
    query_id: str,
    pool: ProbePool,
    stream: Stream,
    v_star: int,
    question: str,
    request: str = "",
) -> Probe | None:
    """The summary probe at ``v*`` (its reference: the events up to v*), asked as
    ``question`` (the battery's text) after the rollback ``request``; None when nothing
    is committed by then."""
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
    # The newest session the restored state holds whole (events or not): the headline's.
    newest = max(
        (s for s in pool.sessions if s.last_version <= v_star), key=lambda s: s.last_version
    )
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
            # Session coverage (all restored sessions): per restored session, the words
            # of its events that the conversation says first in that session.
            "session_words": [new_words[s.session] for s in done if s.session in new_words],
            # RQ3 headline (last-session coverage): the newest restored session's new
            # words, less those the request states (a reply could copy them from it).
            "last_session_words": last_session_words(
                new_words.get(newest.session, ()), request, pool.speakers
            ),
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
