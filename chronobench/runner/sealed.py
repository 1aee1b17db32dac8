"""The sealed protocol's runner side (protocol 3): what a system is handed.

A system sees the stream's public writes (:func:`chronobench.protocols.public_writes`,
handed at ingest), then per query a session that gets the request text and the stream's
question battery: the same texts, in the same seeded order (seeded by the run and the
stream), under the same opaque ids (``q1``, ``q2``, ...) for every query of the stream.
Apart from the request text, everything a system is handed for a query is the same for
every query of the stream. The stream's ``final_qa`` questions (asked at its last
version, no rollback) come once per stream, after all of its queries, in a session that
is never rolled back. Target version, anchor, which battery items a query scores and
how, answers, references and every meta field stay here; only systems registered as
oracles get the target, through :class:`OracleTarget`.
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


def stream_questions(stream: Any, seed: int = 0) -> list[tuple[str, str]]:
    """``(battery id, question text)`` of a stream's battery (``Stream.meta["battery"]``,
    data_builders/battery.py) in the order every query of the stream is asked them:
    shuffled with a seed of the run and the stream, never of a query."""
    battery = (getattr(stream, "meta", None) or {}).get("battery")
    if not battery:
        raise ConfigError(
            f"stream {getattr(stream, 'stream_id', '?')}: no question battery in its meta; "
            "the dataset was built before protocol 3: rebuild it (delete its folder under "
            "data/built or pass build.force=true)"
        )
    items = [(str(b["id"]), str(b["question"])) for b in battery]
    random.Random(sha256_text(f"{seed}\n{stream.stream_id}\nbattery")).shuffle(items)
    return items


def _shuffled(probes: Sequence[Probe], seed: int, key: str, part: str) -> list[Probe]:
    order = list(probes)
    random.Random(sha256_text(f"{seed}\n{key}\n{part}")).shuffle(order)
    return order


def _ask_texts(session: Any, texts: Sequence[str], *, system: str) -> list[Reply]:
    """Ask ``texts`` in one call under ids ``q1``, ``q2``, ...; the replies in that order."""
    questions = [Question(f"q{i}", t) for i, t in enumerate(texts, start=1)]
    replies = session.ask(questions)
    if not isinstance(replies, list) or len(replies) != len(questions):
        raise TypeError(
            f"system {system}: ask() must return a list of one Reply per question "
            f"({len(questions)}), got {type(replies).__name__}"
            + (f" of {len(replies)}" if isinstance(replies, list) else "")
        )
    by_id: dict[str, Reply] = {}
    ids = {q.question_id for q in questions}
    for r in replies:
        if not isinstance(r, Reply) or r.question_id not in ids:
            raise TypeError(
                f"system {system}: ask() returned {r!r}; each item must be a "
                "chronobench.protocols.Reply naming one of the questions' ids"
            )
        by_id[r.question_id] = r
    if len(by_id) != len(questions):
        raise TypeError(f"system {system}: ask() answered some question twice")
    return [by_id[q.question_id] for q in questions]


def _ask(session: Any, order: Sequence[Probe], *, system: str) -> dict[str, Reply]:
    """Ask ``order`` (the shuffled probes) in one call; returns ``{probe_id: reply}``."""
    replies = _ask_texts(session, [p.question for p in order], system=system)
    return {p.probe_id: r for p, r in zip(order, replies, strict=True)}


def _battery_id(probe: Probe, query_id: str) -> str:
    bid = probe.meta.get("battery_id")
    if bid is None:
        raise ConfigError(
            f"query {query_id}: probe {probe.probe_id} names no battery item; the dataset "
            "was built before protocol 3: rebuild it"
        )
    return str(bid)


def ask_query(
    system: Any,
    query: RollbackQuery,
    probes: Sequence[Probe],
    *,
    questions: Sequence[tuple[str, str]],
    oracle: bool = False,
) -> tuple[RollbackOutcome, list[tuple[Probe, Reply]]]:
    """Run one rollback query against an ingested ``system``; returns its rollback
    outcome and a reply per probe of ``probes`` (none of them final), in the order given.

    One session (``open_oracle_session(target)`` for an oracle, else ``open_session()``):
    ``rollback(query.text)``, then ``ask`` the stream's whole battery (``questions``, from
    :func:`stream_questions`): the same texts in the same order for every query of the
    stream. Each probe takes the reply to its battery item; the other replies count for
    nothing, and the system cannot tell which.
    """
    name = getattr(system, "name", type(system).__name__)
    texts = {bid: text for bid, text in questions}
    for p in probes:
        bid = _battery_id(p, query.query_id)
        if p.kind == FINAL_KIND or texts.get(bid) != p.question:
            raise ConfigError(
                f"query {query.query_id}: probe {p.probe_id} is not its stream's battery item "
                f"{bid!r} (a final probe, or another text); rebuild the dataset"
            )
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
    try:
        outcome = session.rollback(query.text)
        if not isinstance(outcome, RollbackOutcome):
            raise TypeError(
                f"system {name}: rollback() returned {type(outcome).__name__}; return a "
                "chronobench.protocols.RollbackOutcome"
            )
        replies = _ask_texts(session, [t for _, t in questions], system=name)
    finally:
        session.close()
    by_item = {bid: r for (bid, _), r in zip(questions, replies, strict=True)}
    return outcome, [(p, by_item[_battery_id(p, query.query_id)]) for p in probes]


def ask_final(
    system: Any, stream_id: str, probes: Sequence[Probe], *, seed: int = 0
) -> list[tuple[Probe, Reply]]:
    """The stream's final session: a new session with no rollback (the agent at the
    stream's last version) asked the ``final_qa`` probes, once per stream, after all of
    its queries, in an order seeded by the stream."""
    if not probes:
        return []
    name = getattr(system, "name", type(system).__name__)
    later = system.open_session()
    try:
        order = _shuffled(probes, seed, stream_id, "final")
        replies = _ask(later, order, system=name)
    finally:
        later.close()
    return [(p, replies[p.probe_id]) for p in probes]
