"""Probe material of one stream (the pool) and the helpers that turn it into probes.

A pool is written next to the streams (``pools.jsonl``) so that user-supplied queries get
exactly the probes the builder would attach at the same ``v*``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chronobench.data.schema import Probe, Scoring, Stream
from chronobench.hashing import stable_hash
from chronobench.metrics.qa import NOT_MENTIONED_OPTION, choice_question
from chronobench.text import CONTENT_STOPWORDS, contains_phrase, normalize, stem

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


class PoolFact(_Model):
    """One annotated statement about a session (LoCoMo ``observation``), for recall
    probes: "Is it true that <statement>?" answered yes when its turns are in memory.

    ``lo``/``hi`` are the versions its cited turns are committed at (as for QA)."""

    fact_id: str
    statement: str
    lo: int
    hi: int
    false_statement: str | None = Field(
        None,
        description="the statement with one word swapped for one never said with its "
        "subject (data_builders/locomo/falsify.py); false at every version",
    )
    meta: dict[str, Any] = Field(default_factory=dict)


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
    facts: list[PoolFact] = Field(default_factory=list)
    summary_reference: str | None = None
    summary_caveat: str | None = None
    speakers: list[str] = Field(default_factory=list)
    generic_floor: str | None = Field(
        None,
        description="RQ3 floor text: speakers' names + frequent words of OTHER "
        "conversations' summaries (built across the dataset)",
    )
    # The caps a builder picks probes with: no defaults here, each dataset's params model
    # (data_builders/<name>/params.py) holds them and its builder passes every one.
    max_answerable: int
    max_future: int
    max_boundary: int = Field(
        description="boundary probes per side: answerable QA whose evidence ends in the "
        "session at v*, future QA whose evidence starts in the first session after v*",
    )
    max_recall: int = Field(description="recall probes (from ``facts``) per boundary side")
    # Pools built before far probes existed carry none: they re-score as they were built.
    max_far: int = Field(
        0,
        description="far probes per side, QA and recall together, spread over sessions: "
        "kept items of sessions before the one at v*, forgotten items of sessions after "
        "the first one after v*",
    )
    battery_qa: int = Field(description="battery QA items per session (or per write)")
    battery_recall: int = Field(description="battery recall statements per session, true and false")
    battery_adversarial: int = Field(description="battery category-5 items per session")
    seed: int


#: The :class:`ProbePool` fields a build sets from its dataset's params model.
POOL_CAPS = (
    "max_answerable",
    "max_future",
    "max_boundary",
    "max_recall",
    "max_far",
    "battery_qa",
    "battery_recall",
    "battery_adversarial",
    "seed",
)


def ranked(
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


def adversarial_options(pool: ProbePool, qa: PoolQA) -> list[str]:
    adversarial = str(qa.meta.get("adversarial_answer") or "").strip()
    options = [NOT_MENTIONED_OPTION, adversarial or "Yes"]
    # LoCoMo shuffles the two options; seeded per question, so every query sees one order.
    if stable_hash(pool.seed, pool.stream_id, qa.qa_id, "options") % 2:
        options.reverse()
    return options


def qa_probe(query_id: str, qa: PoolQA, kind: str, pool: ProbePool) -> Probe:
    future = kind in ("future_qa", "final_qa")
    question = qa.question
    meta: dict[str, Any] = {"qa_id": qa.qa_id, **qa.meta}
    if qa.category == 5 and kind == "qa":
        meta["options"] = adversarial_options(pool, qa)
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


class FutureCheck:
    """Whether a question whose evidence is all after ``v*`` really is unanswerable at
    ``v*`` (the future-probe rules of docs/metrics.md); the past text is read lazily."""

    def __init__(self, stream: Stream, v_star: int) -> None:
        self.stream, self.v_star = stream, v_star
        self._past: str | None = None
        self._stems: set[str] | None = None

    def reason(self, qa: PoolQA) -> str | None:
        """Why ``qa`` is no future probe at ``v*`` (a build-stats key), None when it is."""
        if self._past is None:
            self._past = past_text(self.stream, self.v_star)
        # An answer already present in the past text is derivable at v*: not "future".
        if any(contains_phrase(self._past, normalize(a)) for a in qa.answers):
            return "future:answer_in_past"
        if qa.category == 3:
            # Inference answers can follow from earlier text: keep one only when no
            # content word of its scored part (before ';') occurs before v*.
            # A yes/no (or hedged) answer has no content word to check: a guess, or
            # an inference from earlier text, either way not evidence of the future.
            stems = [_answer_stems(a.split(";")[0]) for a in qa.answers]
            if not any(stems):
                return "future:cat3_no_content_word"
            if self._stems is None:
                self._stems = _past_stems(self.stream, self.v_star)
            if any(st & self._stems for st in stems):
                return "future:cat3_words_in_past"
        elif qa.category is not None and qa.category not in FUTURE_CATEGORIES:
            return f"future:category_{qa.category}"
        return None
