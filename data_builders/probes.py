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
from data_builders.boundary import boundary_probes, boundary_windows, recall_probes, recall_question
from data_builders.pools import (
    FUTURE_CATEGORIES,
    FutureCheck,
    PoolConflict,
    PoolFact,
    PoolQA,
    PoolSession,
    ProbePool,
    past_text,
    qa_probe,
    ranked,
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


def _summary_probe(query_id: str, pool: ProbePool, stream: Stream, v_star: int) -> Probe | None:
    if pool.summary_reference is not None:
        return Probe(
            probe_id=f"{query_id}/summary",
            kind="summary",
            question=SUMMARY_QUESTION,
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
        question=budget_question(),
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
    """Build the probes for a query at ``v*``: answerable QA, future QA, boundary QA
    (:func:`boundary_windows`, up to ``max_boundary`` per side), counterfactual QA
    (conflict slots), and one summary probe when a reference exists.

    Future probes are categories 1, 2 and 4 (and MAB questions, which have none); a
    category-3 question qualifies only when no content word of its answer occurs before
    ``v*``. Candidates passed over are counted in ``stats`` by reason (the cap of
    ``max_future`` stops the count, so it measures what the cap would otherwise take).
    """
    probes: list[Probe] = []
    usable = [qa for qa in pool.qas if qa.qa_id not in exclude_qa]
    answerable = [qa for qa in usable if qa.hi <= v_star]
    for qa in ranked(answerable, lambda q: q.qa_id, pool, v_star, prefer_qa)[: pool.max_answerable]:
        probes.append(qa_probe(query_id, qa, "qa", pool))
    future = [qa for qa in usable if qa.lo > v_star and qa.future_ok]
    check = FutureCheck(stream, v_star)
    if future and pool.max_future > 0:
        taken = 0
        for qa in ranked(future, lambda q: q.qa_id, pool, v_star, prefer_qa):
            if taken >= pool.max_future:
                break
            why = check.reason(qa)
            if why:
                _count(stats, why)
                continue
            probes.append(qa_probe(query_id, qa, "future_qa", pool))
            taken += 1
    if pool.max_boundary > 0:
        probes.extend(boundary_probes(pool, query_id, v_star, usable, probes, check, prefer_qa))
    probes.extend(recall_probes(pool, stream, query_id, v_star))
    live = [c for c in pool.conflicts if c.old_version <= v_star < c.new_version]
    for c in ranked(live, lambda c: c.pair_id, pool, v_star, prefer_qa)[: pool.max_answerable]:
        probes.append(
            Probe(
                probe_id=f"{query_id}/qa/{c.pair_id}",
                kind="qa",
                question=c.question,
                answers=[c.old],
                evidence_versions=[c.old_version],
                future_answers=[c.new],
                scoring=pool.scoring,
                meta={"counterfactual": True, "override_version": c.new_version},
            )
        )
    summary = _summary_probe(query_id, pool, stream, v_star)
    if summary is not None:
        probes.append(summary)
    return probes


def _count(stats: Counter[str] | None, key: str) -> None:
    if stats is not None:
        stats[key] += 1


def add_final_probes(queries: Iterable[Any]) -> int:
    """Give every future question of a stream, and every boundary answerable question,
    one ``final_qa`` probe: the same question asked at the stream's last version without
    rollback. Consistent forgetting and the RC-QA headline need to know whether the
    system can answer a question at all when its evidence is in memory
    (docs/metrics.md). It is attached to the first query (by ``query_id``) whose probes
    hold it, so each question is asked once per stream. Returns the number added."""
    seen: set[tuple[str, str]] = set()
    added = 0
    for q in sorted(queries, key=lambda q: q.query_id):
        extra = []
        for p in q.probes:
            if p.kind == "future_qa":
                answers = list(p.future_answers)
            elif p.kind == "qa" and p.meta.get("boundary") and p.answers:
                # Boundary answerable questions (QA and recall): the headline scores A
                # only on those the system answers at the last version.
                answers = list(p.answers)
            else:
                continue
            qa_id = str(p.meta.get("qa_id", p.question))
            if (q.stream_id, qa_id) in seen:
                continue
            seen.add((q.stream_id, qa_id))
            meta = {k: v for k, v in p.meta.items() if k not in ("boundary", "options")}
            extra.append(
                p.model_copy(
                    update={
                        "probe_id": f"{q.query_id}/final_qa/{qa_id}",
                        "kind": "final_qa",
                        "answers": answers,
                        "meta": {**meta, "asked_at": "last_version"},
                    }
                )
            )
        q.probes.extend(extra)
        added += len(extra)
    return added
