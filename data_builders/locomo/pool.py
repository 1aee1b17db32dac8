"""LoCoMo QA items and annotated events placed on a stream's timeline."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from data_builders.errors import DatasetError, where
from data_builders.locomo.falsify import Falsifier, conversation_texts
from data_builders.locomo.params import LocomoParams
from data_builders.locomo.source import parse_evidence
from data_builders.locomo.streams import StreamBuild, observations
from data_builders.probes import (
    POOL_CAPS,
    PoolFact,
    PoolQA,
    PoolSession,
    ProbePool,
    add_final_probes,
)


def session_events(rec: dict[str, Any], n: int) -> tuple[str, list[str]]:
    """``(date, events)`` of session ``n`` from ``event_summary`` (speaker order kept)."""
    block = rec.get("event_summary", {}).get(f"events_session_{n}") or {}
    date = str(block.get("date", ""))
    events = [
        e.strip()
        for speaker, evs in block.items()
        if speaker != "date" and isinstance(evs, list)
        for e in evs
        if isinstance(e, str) and e.strip()
    ]
    return date, events


def build_pool(
    rec: dict[str, Any],
    sb: StreamBuild,
    *,
    path: Path,
    params: LocomoParams,
) -> tuple[ProbePool, Counter[str]]:
    """Place every QA item and session on the timeline; count QA items left out, by reason.

    The pool's probe caps and seed are the build's ``params``. With ``params.strict`` an unknown or unparseable evidence id raises :class:`DatasetError`;
    otherwise the item is left out (the public file has a handful of such typos).
    """
    skipped: Counter[str] = Counter()
    sid = rec["sample_id"]
    qas: list[PoolQA] = []
    for j, q in enumerate(rec["qa"]):
        ids, bad = parse_evidence(q["evidence"])
        unknown = [i for i in ids if i not in sb.known_ids]
        if bad or unknown:
            if params.strict:
                raise DatasetError(
                    f"{where(path, f'{sid} qa[{j}]', 'evidence')}: unknown dialog id(s) "
                    f"{bad + unknown}; ids must name turns of this conversation (e.g. 'D1:3')"
                )
            skipped["unknown_evidence"] += 1
            continue
        if not ids:
            skipped["no_evidence"] += 1
            continue
        if any(i not in sb.dia_range for i in ids):
            skipped["evidence_not_in_stream"] += 1
            continue
        cat = q["category"]
        meta: dict[str, Any] = {"dialog_ids": ids}
        if cat == 5:
            # Adversarial: the premise is false, gold behaviour is to abstain.
            answers: list[str] = []
            meta["adversarial_answer"] = str(q.get("adversarial_answer", ""))
        elif q.get("answer") is None:
            skipped["no_answer"] += 1
            continue
        else:
            answers = [str(q["answer"])]
        ranges = [sb.dia_range[i] for i in ids]
        qas.append(
            PoolQA(
                qa_id=f"q{j}",
                question=q["question"],
                answers=answers,
                category=cat,
                lo=min(r[0] for r in ranges),
                hi=max(r[1] for r in ranges),
                evidence_versions=sorted({r[1] for r in ranges}),
                future_ok=cat != 5,
                meta=meta,
            )
        )
    sessions = []
    for n, (first, last) in sorted(sb.spans.items()):
        date, events = session_events(rec, n)
        sessions.append(
            PoolSession(
                session=n,
                date=date or sb.dates.get(n, ""),
                events=events,
                first_version=first,
                last_version=last,
            )
        )
    facts: list[PoolFact] = []
    turns, obs = conversation_texts(rec, sorted(sb.spans), observations)
    speakers = [str(x) for x in sb.stream.meta.get("speakers", [])]
    falsifier = Falsifier(turns, obs, speakers, seed=params.seed, stream_id=sb.stream.stream_id)
    for n in sorted(sb.spans):
        session_turns, session_obs = conversation_texts(rec, [n], observations)
        session_texts = [t for _, t in session_turns + session_obs]
        for k, (speaker, text, ids) in enumerate(observations(rec, n), start=1):
            ranges = [sb.dia_range[i] for i in ids if i in sb.dia_range]
            if not ranges or len(ranges) < len(ids) or not text.strip():
                skipped["fact:unknown_evidence"] += 1
                continue
            fact_id = f"o{n}.{k}"
            twin = falsifier.twin(fact_id, text.strip(), speaker, session_texts)
            meta: dict[str, Any] = {"dialog_ids": ids, "speaker": speaker}
            if twin is not None:
                meta["swap"] = [twin.original, twin.replacement]
            # (A fact without a false twin still asks its true statement.)
            facts.append(
                PoolFact(
                    fact_id=fact_id,
                    statement=text.strip(),
                    lo=min(r[0] for r in ranges),
                    hi=max(r[1] for r in ranges),
                    false_statement=twin.statement if twin is not None else None,
                    meta=meta,
                )
            )
    pool = ProbePool(
        stream_id=sb.stream.stream_id,
        scoring="locomo",
        qas=qas,
        sessions=sessions,
        **params.model_dump(include=set(POOL_CAPS)),
        facts=facts,
        speakers=speakers,
    )
    return pool, skipped


#: How many frequent words of the other conversations' summaries the RQ3 floor says.
GENERIC_FLOOR_WORDS = 60


def set_generic_floors(pools: list[ProbePool], n_words: int = GENERIC_FLOOR_WORDS) -> None:
    """Give each pool its RQ3 "generic words" floor text: its speakers' names plus the
    ``n_words`` most frequent words (stopwords included: that is what plain ROUGE-1
    rewards) of every *other* conversation's event summaries, their speakers' names
    left out. Ties break alphabetically, so the text is deterministic."""
    import re

    counts: dict[str, Counter[str]] = {}
    names: dict[str, set[str]] = {}
    for pool in pools:
        text = " ".join(e for s in pool.sessions for e in s.events).lower()
        counts[pool.stream_id] = Counter(re.findall(r"[a-z]+", text))
        names[pool.stream_id] = {w.lower() for n in pool.speakers for w in n.split()}
    for pool in pools:
        total: Counter[str] = Counter()
        banned: set[str] = set()
        for other in pools:
            if other.stream_id != pool.stream_id:
                total.update(counts[other.stream_id])
                banned |= names[other.stream_id]
        ranked = sorted(
            (w for w in total if w not in banned and len(w) > 1), key=lambda w: (-total[w], w)
        )
        # With a single conversation there are no other summaries: the names alone.
        pool.generic_floor = " ".join([*pool.speakers, *ranked[:n_words]])


def finish_probes(res: Any, future_skipped: Counter[str]) -> None:
    """Dataset-wide probe steps once every stream is built: the generic-words RQ3 floor
    (it needs the other conversations), one ``final_qa`` probe per future question per
    stream (consistent forgetting), and the future-probe drop counts for build stats."""
    set_generic_floors(res.pools)
    floors = {p.stream_id: p.generic_floor for p in res.pools}
    for q in res.queries:
        for p in q.probes:
            texts = p.meta.get("floor_texts")
            if p.kind == "summary" and texts is not None and floors.get(q.stream_id):
                texts["generic_words"] = floors[q.stream_id]
    generic = generic_summary_stems(res.pools)
    for q in res.queries:
        for p in q.probes:
            if p.kind == "summary" and p.meta.get("floor_texts") is not None:
                p.meta["generic_stems"] = generic
    res.extra["generic_summary_stems"] = len(generic)
    res.extra["final_qa_probes"] = add_final_probes(res.queries, res.pools, res.streams)
    res.extra["future_candidates_skipped"] = dict(sorted(future_skipped.items()))


def generic_summary_stems(pools: list[ProbePool]) -> list[str]:
    """Content stems found in the event summaries of at least half of the conversations
    (and of at least two): summary vocabulary that fits any conversation ("support",
    "friends", "shared"). Specific content ROUGE-1 leaves them out (docs/metrics.md)."""
    from chronobench.metrics.content import content_stems

    df: Counter[str] = Counter()
    for pool in pools:
        text = " ".join(e for s in pool.sessions for e in s.events)
        df.update(content_stems(text, pool.speakers))
    need = max(2, (len(pools) + 1) // 2)
    return sorted(w for w, c in df.items() if c >= need)
