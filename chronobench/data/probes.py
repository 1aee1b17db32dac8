"""Probe pools: everything needed to attach probes to a rollback query at any ``v*``.

A pool is written next to the streams (``pools.jsonl``) so that user-supplied queries get
exactly the probes the builder would attach at the same ``v*``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chronobench.data.schema import Probe, Scoring, Stream
from chronobench.data.text import contains_phrase, normalize, stable_hash

SUMMARY_QUESTION = "Summarise what has happened so far."


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PoolQA(_Model):
    """One dataset question placed on the stream's timeline.

    ``lo`` is the earliest version at which any of its evidence may be committed and
    ``hi`` the version by which all of it is; the question is answerable at ``v*`` when
    ``hi <= v*`` and entirely in the future when ``lo > v*``.
    """

    qa_id: str
    question: str
    answers: list[str]
    category: int | None = None
    lo: int
    hi: int
    evidence_versions: list[int] = Field(default_factory=list)
    future_ok: bool = True
    meta: dict[str, Any] = Field(default_factory=dict)


class PoolSession(_Model):
    """The annotated events of one session and the versions its writes span."""

    session: int
    date: str
    events: list[str]
    first_version: int
    last_version: int


class PoolConflict(_Model):
    """A fact slot overridden later: before the override, ``old`` is the gold answer."""

    pair_id: str
    question: str
    old: str
    new: str
    old_version: int
    new_version: int


class ProbePool(_Model):
    """Probe material of one stream plus the caps used to pick probes."""

    stream_id: str
    scoring: Scoring
    qas: list[PoolQA] = Field(default_factory=list)
    sessions: list[PoolSession] = Field(default_factory=list)
    conflicts: list[PoolConflict] = Field(default_factory=list)
    summary_reference: str | None = None
    summary_caveat: str | None = None
    max_answerable: int = 3
    max_future: int = 3
    seed: int = 0


def _ranked(
    items: list[Any],
    key_of: Any,
    pool: ProbePool,
    v_star: int,
    prefer: frozenset[str] = frozenset(),
) -> list[Any]:
    # Ranking depends on (stream, v*, item) only, so user queries at the same v* get
    # the same probes as builder queries; ``prefer`` (the anchor's own question) goes first.
    return sorted(
        items,
        key=lambda it: (
            key_of(it) not in prefer,
            stable_hash(pool.seed, pool.stream_id, v_star, key_of(it)),
            key_of(it),
        ),
    )


def past_text(stream: Stream, v_star: int) -> str:
    """Normalised text of every op committed at or before ``v*``."""
    parts = [op.text or "" for w in stream.writes[:v_star] for op in w.ops]
    return normalize(" ".join(parts))


def _qa_probe(query_id: str, qa: PoolQA, kind: str, scoring: Scoring) -> Probe:
    future = kind == "future_qa"
    return Probe(
        probe_id=f"{query_id}/{kind}/{qa.qa_id}",
        kind=kind,  # type: ignore[arg-type]
        question=qa.question,
        answers=[] if future else list(qa.answers),
        category=qa.category,
        evidence_versions=list(qa.evidence_versions),
        future_answers=list(qa.answers) if future else [],
        scoring=scoring,
        meta={"qa_id": qa.qa_id, **qa.meta},
    )


def _summary_probe(query_id: str, pool: ProbePool, v_star: int) -> Probe | None:
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
    return Probe(
        probe_id=f"{query_id}/summary",
        kind="summary",
        question=SUMMARY_QUESTION,
        reference=reference,
        future_references=future,
        scoring=pool.scoring,
        meta={"sessions": [s.session for s in done]},
    )


def attach_probes(
    pool: ProbePool,
    stream: Stream,
    query_id: str,
    v_star: int,
    *,
    exclude_qa: frozenset[str] = frozenset(),
    prefer_qa: frozenset[str] = frozenset(),
) -> list[Probe]:
    """Build the probes for a query at ``v*``: answerable QA, future QA, counterfactual
    QA (conflict slots), and one summary probe when a reference exists."""
    probes: list[Probe] = []
    usable = [qa for qa in pool.qas if qa.qa_id not in exclude_qa]
    answerable = [qa for qa in usable if qa.hi <= v_star]
    for qa in _ranked(answerable, lambda q: q.qa_id, pool, v_star, prefer_qa)[
        : pool.max_answerable
    ]:
        probes.append(_qa_probe(query_id, qa, "qa", pool.scoring))
    future = [qa for qa in usable if qa.lo > v_star and qa.future_ok]
    if future and pool.max_future > 0:
        past = past_text(stream, v_star)
        taken = 0
        for qa in _ranked(future, lambda q: q.qa_id, pool, v_star, prefer_qa):
            # An answer already present in the past text is derivable at v*: not "future".
            if any(contains_phrase(past, normalize(a)) for a in qa.answers):
                continue
            probes.append(_qa_probe(query_id, qa, "future_qa", pool.scoring))
            taken += 1
            if taken >= pool.max_future:
                break
    live = [c for c in pool.conflicts if c.old_version <= v_star < c.new_version]
    for c in _ranked(live, lambda c: c.pair_id, pool, v_star, prefer_qa)[: pool.max_answerable]:
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
    summary = _summary_probe(query_id, pool, v_star)
    if summary is not None:
        probes.append(summary)
    return probes
