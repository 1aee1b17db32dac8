"""Boundary probes (issue 15): questions on both sides of ``v*``.

The RC-QA headline reads them (docs/metrics.md): QA items and recall probes whose
evidence is in the session at ``v*`` (kept by a correct rollback, lost by one that
stops short) and in the first session after it (gone after a correct rollback, exposed
by one that overshoots).
"""

from __future__ import annotations

from functools import lru_cache

from chronobench.data.schema import Probe, Stream
from chronobench.text import CONTENT_STOPWORDS
from data_builders.pools import FutureCheck, PoolFact, PoolQA, ProbePool, qa_probe, ranked


def boundary_windows(
    pool: ProbePool, v_star: int
) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """The two version windows around ``v*`` that a rollback must get right.

    ``before``: from the first write of the session holding ``v*`` up to ``v*`` (what an
    off-by-one towards the past loses); ``after``: from ``v* + 1`` to the last write of
    the session holding ``v* + 1`` (what an off-by-one towards the future exposes). At
    session granularity these are the session at ``v*`` and the first session after
    it; a window is None where there is no such session (``v* = 0``, or the end).
    """
    spans = sorted((s.first_version, s.last_version) for s in pool.sessions)
    before = next(((a, v_star) for a, b in reversed(spans) if a <= v_star), None)
    after = next(((v_star + 1, b) for a, b in spans if b > v_star), None)
    return (before if v_star >= 1 else None), after


def boundary_probes(
    pool: ProbePool,
    query_id: str,
    v_star: int,
    usable: list[PoolQA],
    taken: list[Probe],
    check: FutureCheck,
    prefer: frozenset[str],
) -> list[Probe]:
    """Up to ``max_boundary`` answerable probes whose evidence ends in the ``before``
    window and as many future probes whose evidence starts in the ``after`` window
    (:func:`boundary_windows`); probes already in ``taken`` are flagged, not repeated.
    Every boundary probe carries ``meta["boundary"]`` (``"before"`` / ``"after"``), which
    the RC-QA headline reads (docs/metrics.md). Category 5 and questions without a gold
    answer are never boundary probes (they are not in A)."""
    before, after = boundary_windows(pool, v_star)
    have = {(p.kind, p.meta.get("qa_id")): p for p in taken}
    out: list[Probe] = []
    sides: list[tuple[str, str, list[PoolQA]]] = []
    if before is not None:
        lo, hi = before
        cands = [q for q in usable if q.answers and q.category != 5 and lo <= q.hi <= hi]
        sides.append(("before", "qa", cands))
    if after is not None:
        lo, hi = after
        cands = [q for q in usable if q.future_ok and lo <= q.lo <= hi]
        sides.append(("after", "future_qa", [q for q in cands if check.reason(q) is None]))
    for side, kind, cands in sides:
        for qa in ranked(cands, lambda q: q.qa_id, pool, v_star, prefer)[: pool.max_boundary]:
            probe = have.get((kind, qa.qa_id))
            if probe is None:
                probe = qa_probe(query_id, qa, kind, pool)
                out.append(probe)
            probe.meta["boundary"] = side
    return out


RECALL_PREFIX = "Is it true that"
#: A recall statement must carry this many content stems that the memory on the wrong
#: side of the boundary never said (docs/metrics.md: recall probes).
RECALL_MIN_NOVEL = 2


def recall_question(statement: str) -> str:
    """``Is it true that <statement>?`` (a leading function word is lower-cased)."""
    text = statement.strip().rstrip(".!? ")
    first, _, rest = text.partition(" ")
    if first.lower() in CONTENT_STOPWORDS:
        text = f"{first.lower()} {rest}".strip()
    return f"{RECALL_PREFIX} {text}?"


def _novel_enough(statement: str, known: set[str], names: list[str]) -> bool:
    from chronobench.metrics.content import content_stems

    return len(content_stems(statement, names) - known) >= RECALL_MIN_NOVEL


@lru_cache(maxsize=8192)
def _write_stems(text: str, names: tuple[str, ...]) -> frozenset[str]:
    # One write's content stems, memoised: every query of a stream re-reads its writes.
    from chronobench.metrics.content import content_stems

    return frozenset(content_stems(text, names))


def recall_probes(pool: ProbePool, stream: Stream, query_id: str, v_star: int) -> list[Probe]:
    """Up to ``max_recall`` recall probes per boundary side (docs/metrics.md).

    ``before``: statements whose turns are all in the session at ``v*`` and most of
    whose content the memory before that session does not hold, so a restore that stops
    short loses them; gold "Yes". ``after``: statements whose turns start in the first
    session after ``v*`` and most of whose content the memory up to ``v*`` does not
    hold, so a restore that overshoots exposes them; gold: abstain (or "No")."""
    if pool.max_recall <= 0 or not pool.facts:
        return []
    before, after = boundary_windows(pool, v_star)
    out: list[Probe] = []
    names = tuple(pool.speakers)

    def known_upto(v: int) -> set[str]:
        known: set[str] = set()
        for w in stream.writes[:v]:
            known |= _write_stems(" ".join(op.text or "" for op in w.ops), names)
        return known

    sides: list[tuple[str, list[PoolFact], set[str]]] = []
    if before is not None:
        lo, hi = before
        cands = [f for f in pool.facts if lo <= f.lo and f.hi <= hi]
        if cands:
            sides.append(("before", cands, known_upto(lo - 1)))
    if after is not None:
        lo, hi = after
        cands = [f for f in pool.facts if lo <= f.lo <= hi]
        if cands:
            sides.append(("after", cands, known_upto(v_star)))
    for side, cands, known in sides:
        ok = [f for f in cands if _novel_enough(f.statement, known, pool.speakers)]
        for f in ranked(ok, lambda f: f.fact_id, pool, v_star)[: pool.max_recall]:
            kind = "qa" if side == "before" else "future_qa"
            answers = ["Yes"]
            out.append(
                Probe(
                    probe_id=f"{query_id}/{kind}/{f.fact_id}",
                    kind=kind,  # type: ignore[arg-type]
                    question=recall_question(f.statement),
                    answers=answers if kind == "qa" else [],
                    future_answers=answers if kind == "future_qa" else [],
                    evidence_versions=sorted({f.lo, f.hi}),
                    scoring=pool.scoring,
                    meta={
                        "qa_id": f.fact_id,
                        "format": "recall",
                        "statement": f.statement,
                        "boundary": side,
                        **f.meta,
                    },
                )
            )
    return out
