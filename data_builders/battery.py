"""The question battery of a stream (protocol 3, docs/protocol.md).

Every rollback query of a stream is asked the same questions: the stream's battery,
drawn once from its probe pool without reference to any target version. Per session
(per write when the stream has no sessions) it holds ``battery_qa`` QA items with a gold
answer, ``battery_adversarial`` category-5 items, ``battery_recall`` true recall
statements and as many false ones (from other observations of the session), plus the
conflict questions and the summary request. Only the scorer decides, per query, which
of them count and how (:func:`label_probes`): the question set says nothing about v*.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chronobench.data.schema import Probe, Stream
from chronobench.hashing import stable_hash
from chronobench.metrics.qa import choice_question
from data_builders.boundary import boundary_windows, novel_enough, recall_question, stems_upto
from data_builders.far import far_recall_side, session_starts, spread, unit_of
from data_builders.pools import (
    FutureCheck,
    PoolConflict,
    PoolFact,
    PoolQA,
    ProbePool,
    adversarial_options,
    qa_probe,
    ranked,
)
from data_builders.summaries import SUMMARY_QUESTION, budget_question, summary_probe

#: Suffix of a false recall statement's item id (the true one is the fact id itself).
FALSE_SUFFIX = "-false"


@dataclass(frozen=True)
class BatteryItem:
    """One question of a stream's battery and the pool record it was drawn from."""

    item_id: str
    question: str
    source: str  # "qa" | "recall" | "conflict" | "summary"
    ref: Any = None
    truth: bool | None = None  # recall statements: true or false in the conversation


def _static(items: list[Any], key_of: Any, pool: ProbePool) -> list[Any]:
    # The battery's order of preference: a seeded hash of the stream and the item, no v*.
    return sorted(
        items,
        key=lambda it: (stable_hash(pool.seed, pool.stream_id, "battery", key_of(it)), key_of(it)),
    )


def _qa_item(qa: PoolQA, pool: ProbePool) -> BatteryItem:
    question = qa.question
    if qa.category == 5:
        # Asked in LoCoMo's two-way-choice form at every version.
        question = choice_question(qa.question, adversarial_options(pool, qa))
    return BatteryItem(qa.qa_id, question, "qa", qa)


def _recall_item(f: PoolFact, truth: bool) -> BatteryItem:
    if truth:
        return BatteryItem(f.fact_id, recall_question(f.statement), "recall", f, True)
    assert f.false_statement is not None
    return BatteryItem(
        f"{f.fact_id}{FALSE_SUFFIX}", recall_question(f.false_statement), "recall", f, False
    )


def _units(pool: ProbePool, stream: Stream) -> list[tuple[int, int]]:
    """The version spans the battery is stratified over: sessions, else single writes."""
    if pool.sessions:
        return sorted((s.first_version, s.last_version) for s in pool.sessions)
    return [(v, v) for v in range(1, stream.n_versions + 1)]


def _build(pool: ProbePool, stream: Stream) -> list[BatteryItem]:
    items: list[BatteryItem] = []
    swapped: set[str] = set()
    qid = lambda q: q.qa_id  # noqa: E731
    fid = lambda f: f.fact_id  # noqa: E731
    for lo, hi in _units(pool, stream):
        here = [q for q in pool.qas if lo <= q.hi <= hi]
        scored = [q for q in here if q.answers and q.category != 5]
        adversarial = [q for q in here if q.category == 5]
        chosen = _static(scored, qid, pool)[: pool.battery_qa]
        chosen += _static(adversarial, qid, pool)[: pool.battery_adversarial]
        items += [_qa_item(q, pool) for q in sorted(chosen, key=qid)]
        if pool.battery_recall > 0:
            facts = [f for f in pool.facts if lo <= f.lo and f.hi <= hi]
            false = []
            for f in _static([f for f in facts if f.false_statement], fid, pool):
                swap = f.meta.get("swap")
                word = str(swap[1]).lower() if swap else str(f.false_statement)
                if word in swapped:
                    continue  # one false statement per replacement word and stream
                if len(false) < min(pool.battery_recall, len(facts) // 2):
                    false.append(f)
                    swapped.add(word)
            taken = {f.fact_id for f in false}
            true = [f for f in _static(facts, fid, pool) if f.fact_id not in taken]
            # As many true statements as false ones, per session.
            true = true[: len(false)]
            recall = [(f, True) for f in true] + [(f, False) for f in false]
            items += [_recall_item(f, t) for f, t in sorted(recall, key=lambda x: x[0].fact_id)]
        live = [c for c in pool.conflicts if lo <= c.old_version <= hi]
        for c in sorted(
            _static(live, lambda c: c.pair_id, pool)[: pool.battery_qa], key=lambda c: c.pair_id
        ):
            items.append(BatteryItem(c.pair_id, c.question, "conflict", c))
    if pool.summary_reference is not None or any(s.events for s in pool.sessions):
        text = SUMMARY_QUESTION if pool.summary_reference is not None else budget_question()
        items.append(BatteryItem("summary", text, "summary"))
    seen: set[str] = set()
    for it in items:
        if it.item_id in seen:
            raise ValueError(f"stream {pool.stream_id}: battery item id {it.item_id!r} twice")
        seen.add(it.item_id)
    return items


# A pool's battery by object: every query of a stream labels the same battery.
_BATTERIES: dict[int, tuple[ProbePool, list[BatteryItem]]] = {}


def stream_battery(pool: ProbePool, stream: Stream) -> list[BatteryItem]:
    """The stream's battery (deterministic in the pool and the stream)."""
    hit = _BATTERIES.get(id(pool))
    if hit is not None and hit[0] is pool:
        return hit[1]
    if len(_BATTERIES) > 256:
        _BATTERIES.clear()
    items = _build(pool, stream)
    _BATTERIES[id(pool)] = (pool, items)
    return items


def battery_record(items: Iterable[BatteryItem]) -> list[dict[str, str]]:
    """What the stream file keeps of the battery: ids and question texts (``Stream.meta
    ["battery"]``); the runner hands exactly these texts to every query's session."""
    return [{"id": it.item_id, "question": it.question} for it in items]


def _recall_probe(query_id: str, item: BatteryItem, kind: str, side: str, pool: ProbePool) -> Probe:
    f: PoolFact = item.ref
    gold = ["Yes" if item.truth else "No"]
    return Probe(
        probe_id=f"{query_id}/{kind}/{item.item_id}",
        kind=kind,  # type: ignore[arg-type]
        question=item.question,
        answers=gold if kind == "qa" else [],
        future_answers=gold if kind == "future_qa" else [],
        evidence_versions=sorted({f.lo, f.hi}),
        scoring=pool.scoring,
        meta={
            "qa_id": item.item_id,
            "battery_id": item.item_id,
            "format": "recall",
            "truth": bool(item.truth),
            "statement": item.question,
            "boundary": side,
            **f.meta,
        },
    )


def _tag(probe: Probe, item: BatteryItem, side: str | None = None) -> Probe:
    probe.meta["battery_id"] = item.item_id
    probe.question = item.question
    if side is not None:
        probe.meta["boundary"] = side
    return probe


def _recall_side(
    f: PoolFact,
    pool: ProbePool,
    stream: Stream,
    v_star: int,
    before: tuple[int, int] | None,
    after: tuple[int, int] | None,
) -> str | None:
    """Which boundary side a recall statement tests at ``v*`` (None: neither): its turns
    all in the session at v*, or starting in the one after it, with enough content the
    memory on the other side of the boundary lacks (docs/metrics.md)."""
    names = tuple(pool.speakers)
    if before and before[0] <= f.lo and f.hi <= before[1]:
        known = stems_upto(stream, before[0] - 1, names)
        return "before" if novel_enough(f.statement, known, pool.speakers) else None
    if after and after[0] <= f.lo <= after[1]:
        known = stems_upto(stream, v_star, names)
        return "after" if novel_enough(f.statement, known, pool.speakers) else None
    return None


def label_probes(
    pool: ProbePool,
    stream: Stream,
    query_id: str,
    v_star: int,
    *,
    exclude_qa: frozenset[str] = frozenset(),
    prefer_qa: frozenset[str] = frozenset(),
    stats: Counter[str] | None = None,
    request: str = "",
) -> list[Probe]:
    """The scored probes of one query at ``v*``: battery items labelled by where their
    evidence lies (docs/metrics.md). Boundary *keep* (evidence ends in the session at v*)
    and *forget* (evidence starts in the first session after it, passing the future
    checks for this v*) items are the headline's; up to ``max_answerable`` other
    answerable and ``max_future`` other future QA items, live conflict questions and the
    summary request are scored too. Every other battery item is asked and not scored.
    ``request``: the rollback request's text (the summary probe's headline leaves out
    the words it states)."""
    battery = stream_battery(pool, stream)
    before, after = boundary_windows(pool, v_star)
    check = FutureCheck(stream, v_star)
    out: list[Probe] = []
    keep_qa: list[BatteryItem] = []
    forget_qa: list[BatteryItem] = []
    past: list[BatteryItem] = []
    future: list[BatteryItem] = []
    keep_recall: list[BatteryItem] = []
    forget_recall: list[BatteryItem] = []
    far_keep: list[BatteryItem] = []  # QA and recall, sessions before the one at v*
    far_forget: list[BatteryItem] = []  # sessions after the first one after v*
    starts = session_starts(pool, stream)
    for it in battery:
        if it.source == "qa":
            qa: PoolQA = it.ref
            if qa.qa_id in exclude_qa:
                continue
            if before and qa.answers and qa.category != 5 and before[0] <= qa.hi <= before[1]:
                keep_qa.append(it)
            elif after and qa.future_ok and after[0] <= qa.lo <= after[1]:
                why = check.reason(qa)
                if why is None:
                    forget_qa.append(it)
                elif stats is not None:
                    stats[why] += 1
            elif qa.hi <= v_star:
                past.append(it)
            elif qa.lo > v_star and qa.future_ok:
                why = check.reason(qa)
                if why is None:
                    future.append(it)
                elif stats is not None:
                    stats[why] += 1
        elif it.source == "recall":
            side = _recall_side(it.ref, pool, stream, v_star, before, after)
            if side == "before":
                keep_recall.append(it)
            elif side == "after":
                forget_recall.append(it)
            elif pool.max_far > 0:
                far = far_recall_side(it.ref, pool, stream, v_star, starts, before, after)
                if far is not None:
                    (far_keep if far == "before" else far_forget).append(it)
        elif it.source == "conflict":
            c: PoolConflict = it.ref
            if c.old_version <= v_star < c.new_version:
                out.append(
                    _tag(
                        Probe(
                            probe_id=f"{query_id}/qa/{c.pair_id}",
                            kind="qa",
                            question=it.question,
                            answers=[c.old],
                            evidence_versions=[c.old_version],
                            future_answers=[c.new],
                            scoring=pool.scoring,
                            meta={"counterfactual": True, "override_version": c.new_version},
                        ),
                        it,
                    )
                )
        elif it.source == "summary":
            probe = summary_probe(query_id, pool, stream, v_star, it.question, request)
            if probe is not None:
                out.append(_tag(probe, it))
    key = lambda it: it.item_id  # noqa: E731
    if pool.max_far > 0:
        far_keep += [it for it in past if _far_keep_qa(it, before)]
        far_forget += [it for it in future if after is not None and it.ref.lo > after[1]]
        taken = set()
        for side, items in (("before", far_keep), ("after", far_forget)):
            where = lambda it, side=side: unit_of(starts, _anchor_version(it, side))  # noqa: E731
            for it, unit in spread(items, where, key, pool, v_star, pool.max_far):
                out.append(_far_probe(query_id, it, side, unit, pool))
                taken.add(it.item_id)
        past = [it for it in past if it.item_id not in taken]
        future = [it for it in future if it.item_id not in taken]
    cap = pool.max_boundary
    for it in ranked(keep_qa, key, pool, v_star, prefer_qa)[:cap]:
        out.append(_tag(qa_probe(query_id, it.ref, "qa", pool), it, "before"))
    for it in ranked(forget_qa, key, pool, v_star, prefer_qa)[:cap]:
        out.append(_tag(qa_probe(query_id, it.ref, "future_qa", pool), it, "after"))
    for it in ranked(past, key, pool, v_star, prefer_qa)[: pool.max_answerable]:
        out.append(_tag(qa_probe(query_id, it.ref, "qa", pool), it))
    for it in ranked(future, key, pool, v_star, prefer_qa)[: pool.max_future]:
        out.append(_tag(qa_probe(query_id, it.ref, "future_qa", pool), it))
    if pool.max_recall > 0:
        for it in ranked(keep_recall, key, pool, v_star)[: pool.max_recall]:
            out.append(_recall_probe(query_id, it, "qa", "before", pool))
        for it in ranked(forget_recall, key, pool, v_star)[: pool.max_recall]:
            out.append(_recall_probe(query_id, it, "future_qa", "after", pool))
    return out


def _far_keep_qa(it: BatteryItem, before: tuple[int, int] | None) -> bool:
    qa: PoolQA = it.ref
    return before is not None and bool(qa.answers) and qa.category != 5 and qa.hi < before[0]


def _anchor_version(it: BatteryItem, side: str) -> int:
    # A kept item belongs to the session its evidence ends in, a forgotten one to the
    # session its evidence starts in (where a rollback first has to drop it).
    ref = it.ref
    return int(ref.hi if side == "before" else ref.lo)


def _far_probe(query_id: str, it: BatteryItem, side: str, unit: int, pool: ProbePool) -> Probe:
    kind = "qa" if side == "before" else "future_qa"
    if it.source == "recall":
        probe = _recall_probe(query_id, it, kind, side, pool)
    else:
        probe = _tag(qa_probe(query_id, it.ref, kind, pool), it, side)
    probe.meta["reach"] = "far"
    probe.meta["session_index"] = unit
    return probe


def final_probes(pool: ProbePool, stream: Stream, query_id: str) -> list[Probe]:
    """The stream's last-version questions: every battery item with a gold answer there
    (QA with an answer, recall statements, conflicts at their newest value), asked once
    per stream with no rollback. Their answers fill ``final_correct``; they choose no
    probe (the known set comes from the reference reader, docs/metrics.md)."""
    out: list[Probe] = []
    for it in stream_battery(pool, stream):
        if it.source == "qa" and it.ref.answers and it.ref.category != 5:
            p = qa_probe(query_id, it.ref, "final_qa", pool)
            p.answers = list(it.ref.answers)
        elif it.source == "recall":
            p = _recall_probe(query_id, it, "qa", "final", pool)
            p.meta.pop("boundary")
        elif it.source == "conflict":
            c: PoolConflict = it.ref
            p = Probe(
                probe_id="",
                kind="final_qa",
                question=it.question,
                answers=[c.new],
                evidence_versions=[c.new_version],
                scoring=pool.scoring,
                meta={"qa_id": c.pair_id},
            )
        else:
            continue
        p.kind = "final_qa"
        p.probe_id = f"{query_id}/final_qa/{it.item_id}"
        p.meta = {**p.meta, "asked_at": "last_version"}
        out.append(_tag(p, it))
    return out
