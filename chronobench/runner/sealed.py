"""The sealed protocol's runner side: what a system is handed for one rollback query.

A system sees the stream's public writes (:func:`chronobench.protocols.public_writes`,
handed at ingest), then per query a session that gets the request text and the
questions: text only, in a seeded shuffled order, with opaque ids (``q1``, ``q2``, ...
in the order asked). The query's ``final_qa`` questions (asked at the stream's last
version, no rollback) come afterwards in a new session that is never rolled back, so
no system can tell in advance which questions will be asked again. Target version,
anchor, probe kinds, answers, references and every meta field stay here; only systems
registered as oracles get the target, through :class:`OracleTarget`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from chronobench.data.schema import Probe, RollbackQuery
from chronobench.errors import ConfigError
from chronobench.hashing import sha256_text
from chronobench.protocols import OracleTarget, Question, Reply, RollbackOutcome

# Probes of this kind are asked in the second, rollback-free session.
FINAL_KIND = "final_qa"


def oracle_target(query: RollbackQuery) -> OracleTarget:
    """The oracle channel's message for ``query``: its v* and the content-free floor
    texts the builder prepared for its summary question."""
    floors: dict[str, str] = {}
    for p in query.probes:
        if p.kind == "summary":
            floors.update({str(k): str(v) for k, v in (p.meta.get("floor_texts") or {}).items()})
    return OracleTarget(target_version=query.target_version, floor_texts=floors)


def _shuffled(probes: Sequence[Probe], seed: int, query_id: str, part: str) -> list[Probe]:
    order = list(probes)
    random.Random(sha256_text(f"{seed}\n{query_id}\n{part}")).shuffle(order)
    return order


def _ask(session: Any, order: Sequence[Probe], *, system: str) -> dict[str, Reply]:
    """Ask ``order`` (the shuffled probes) in one call; returns ``{probe_id: reply}``."""
    questions = [Question(f"q{i}", p.question) for i, p in enumerate(order, start=1)]
    replies = session.ask(questions)
    if not isinstance(replies, list) or len(replies) != len(questions):
        raise TypeError(
            f"system {system}: ask() must return a list of one Reply per question "
            f"({len(questions)}), got {type(replies).__name__}"
            + (f" of {len(replies)}" if isinstance(replies, list) else "")
        )
    by_id = {q.question_id: p for q, p in zip(questions, order, strict=True)}
    out: dict[str, Reply] = {}
    for r in replies:
        if not isinstance(r, Reply) or r.question_id not in by_id:
            raise TypeError(
                f"system {system}: ask() returned {r!r}; each item must be a "
                "chronobench.protocols.Reply naming one of the questions' ids"
            )
        out[by_id[r.question_id].probe_id] = r
    if len(out) != len(questions):
        raise TypeError(f"system {system}: ask() answered some question twice")
    return out


def ask_query(
    system: Any,
    query: RollbackQuery,
    probes: Sequence[Probe],
    *,
    oracle: bool = False,
    seed: int = 0,
) -> tuple[RollbackOutcome, list[tuple[Probe, Reply]]]:
    """Run one rollback query against an ingested ``system``; returns its rollback
    outcome and a reply per probe of ``probes``, in the order given.

    Session 1 (``open_oracle_session(target)`` for an oracle, else ``open_session()``):
    ``rollback(query.text)``, then ``ask`` every probe but the final ones. Session 2
    (``open_session()``, no rollback): ``ask`` the ``final_qa`` probes.
    """
    name = getattr(system, "name", type(system).__name__)
    main = [p for p in probes if p.kind != FINAL_KIND]
    final = [p for p in probes if p.kind == FINAL_KIND]
    if oracle:
        opener = getattr(system, "open_oracle_session", None)
        if opener is None:
            raise ConfigError(
                f"system {name} is registered as an oracle but has no "
                "open_oracle_session(target); implement chronobench.protocols.OracleSystem"
            )
        session = opener(oracle_target(query))
    else:
        session = system.open_session()
    replies: dict[str, Reply] = {}
    try:
        outcome = session.rollback(query.text)
        if not isinstance(outcome, RollbackOutcome):
            raise TypeError(
                f"system {name}: rollback() returned {type(outcome).__name__}; return a "
                "chronobench.protocols.RollbackOutcome"
            )
        if main:
            order = _shuffled(main, seed, query.query_id, "main")
            replies.update(_ask(session, order, system=name))
    finally:
        session.close()
    if final:
        later = system.open_session()
        try:
            order = _shuffled(final, seed, query.query_id, "final")
            replies.update(_ask(later, order, system=name))
        finally:
            later.close()
    return outcome, [(p, replies[p.probe_id]) for p in probes]
