"""Probe pools: everything needed to attach probes to a rollback query at any ``v*``.

A pool is written next to the streams (``pools.jsonl``) so that user-supplied queries get
exactly the probes the builder would attach at the same ``v*``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chronobench.data.schema import Probe, Scoring, Stream
from chronobench.hashing import stable_hash
from chronobench.metrics.qa import NOT_MENTIONED_OPTION, choice_question
from chronobench.metrics.summary import novel_event_words
from chronobench.text import CONTENT_STOPWORDS, contains_phrase, normalize, stem

SUMMARY_QUESTION = "Summarise what has happened so far."

#: Categories whose answers need the evidence itself; category 3 (inference) qualifies as
#: a future probe only when none of its answer's content words occurs before v*.
FUTURE_CATEGORIES = frozenset({1, 2, 4})


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
    speakers: list[str] = Field(default_factory=list)
    generic_floor: str | None = Field(
        None,
        description="RQ3 floor text: speakers' names + frequent words of OTHER "
        "conversations' summaries (built across the dataset)",
    )
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


def _past_stems(stream: Stream, v_star: int) -> set[str]:
    return {stem(w) for w in past_text(stream, v_star).split() if w not in CONTENT_STOPWORDS}


#: Words of an inference answer that carry no content: "Likely yes", "Probably not".
_HEDGES = frozenset(
    "yes no not likely unlikely probably possibly maybe perhaps somewhat definitely".split()
)


def _answer_stems(answer: str) -> set[str]:
    # Names and numbers are kept: a name said before v* can already answer "who".
    return {
        stem(w)
        for w in normalize(answer).split()
        if w not in CONTENT_STOPWORDS and w not in _HEDGES
    }


def _adversarial_options(pool: ProbePool, qa: PoolQA) -> list[str]:
    adversarial = str(qa.meta.get("adversarial_answer") or "").strip()
    options = [NOT_MENTIONED_OPTION, adversarial or "Yes"]
    # LoCoMo shuffles the two options; seeded per question, so every query sees one order.
    if stable_hash(pool.seed, pool.stream_id, qa.qa_id, "options") % 2:
        options.reverse()
    return options


def _qa_probe(query_id: str, qa: PoolQA, kind: str, pool: ProbePool) -> Probe:
    future = kind in ("future_qa", "final_qa")
    question = qa.question
    meta: dict[str, Any] = {"qa_id": qa.qa_id, **qa.meta}
    if qa.category == 5 and kind == "qa":
        meta["options"] = _adversarial_options(pool, qa)
        question = choice_question(qa.question, meta["options"])
    return Probe(
        probe_id=f"{query_id}/{kind}/{qa.qa_id}",
        kind=kind,  # type: ignore[arg-type]
        question=question,
        answers=list(qa.answers) if kind != "future_qa" else [],
        category=qa.category,
        evidence_versions=list(qa.evidence_versions),
        future_answers=list(qa.answers) if future else [],
        scoring=pool.scoring,
        meta=meta,
    )


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
    return Probe(
        probe_id=f"{query_id}/summary",
        kind="summary",
        question=SUMMARY_QUESTION,
        reference=reference,
        future_references=future,
        scoring=pool.scoring,
        meta={
            "sessions": [s.session for s in done],
            "speakers": list(pool.speakers),
            # Calibrated leakage (docs/metrics.md): per eligible post-v* event, its
            # content stems found neither in the memory up to v* nor in the reference.
            "novel_words": novel_event_words(future, f"{memory}\n{reference}", pool.speakers),
            # Content-free outputs the RQ3 floor rows replay (floor_text system).
            "floor_texts": floors,
        },
    )


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
    """Build the probes for a query at ``v*``: answerable QA, future QA, counterfactual
    QA (conflict slots), and one summary probe when a reference exists.

    Future probes are categories 1, 2 and 4 (and MAB questions, which have none); a
    category-3 question qualifies only when no content word of its answer occurs before
    ``v*``. Candidates passed over are counted in ``stats`` by reason (the cap of
    ``max_future`` stops the count, so it measures what the cap would otherwise take).
    """
    probes: list[Probe] = []
    usable = [qa for qa in pool.qas if qa.qa_id not in exclude_qa]
    answerable = [qa for qa in usable if qa.hi <= v_star]
    for qa in _ranked(answerable, lambda q: q.qa_id, pool, v_star, prefer_qa)[
        : pool.max_answerable
    ]:
        probes.append(_qa_probe(query_id, qa, "qa", pool))
    future = [qa for qa in usable if qa.lo > v_star and qa.future_ok]
    if future and pool.max_future > 0:
        past = past_text(stream, v_star)
        past_stems: set[str] | None = None
        taken = 0
        for qa in _ranked(future, lambda q: q.qa_id, pool, v_star, prefer_qa):
            if taken >= pool.max_future:
                break
            # An answer already present in the past text is derivable at v*: not "future".
            if any(contains_phrase(past, normalize(a)) for a in qa.answers):
                _count(stats, "future:answer_in_past")
                continue
            if qa.category == 3:
                # Inference answers can follow from earlier text: keep one only when no
                # content word of its scored part (before ';') occurs before v*.
                # A yes/no (or hedged) answer has no content word to check: a guess, or
                # an inference from earlier text, either way not evidence of the future.
                stems = [_answer_stems(a.split(";")[0]) for a in qa.answers]
                if not any(stems):
                    _count(stats, "future:cat3_no_content_word")
                    continue
                if past_stems is None:
                    past_stems = _past_stems(stream, v_star)
                if any(st & past_stems for st in stems):
                    _count(stats, "future:cat3_words_in_past")
                    continue
            elif qa.category is not None and qa.category not in FUTURE_CATEGORIES:
                _count(stats, f"future:category_{qa.category}")
                continue
            probes.append(_qa_probe(query_id, qa, "future_qa", pool))
            taken += 1
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
    summary = _summary_probe(query_id, pool, stream, v_star)
    if summary is not None:
        probes.append(summary)
    return probes


def _count(stats: Counter[str] | None, key: str) -> None:
    if stats is not None:
        stats[key] += 1


def add_final_probes(queries: Iterable[Any]) -> int:
    """Give every future question of a stream one ``final_qa`` probe: the same question
    asked at the stream's last version without rollback (consistent forgetting needs
    to know whether the system can answer it at all). It is attached to the first query
    (by ``query_id``) whose future probes hold it, so each question is asked once per
    stream. Returns the number of probes added."""
    seen: set[tuple[str, str]] = set()
    added = 0
    for q in sorted(queries, key=lambda q: q.query_id):
        extra = []
        for p in q.probes:
            if p.kind != "future_qa":
                continue
            qa_id = str(p.meta.get("qa_id", p.question))
            if (q.stream_id, qa_id) in seen:
                continue
            seen.add((q.stream_id, qa_id))
            extra.append(
                p.model_copy(
                    update={
                        "probe_id": f"{q.query_id}/final_qa/{qa_id}",
                        "kind": "final_qa",
                        "answers": list(p.future_answers),
                        "meta": {**p.meta, "asked_at": "last_version"},
                    }
                )
            )
        q.probes.extend(extra)
        added += len(extra)
    return added
