"""Far probes: what a rollback to ``v*`` must keep and forget beyond the two boundary
sessions (docs/metrics.md, RQ2).

The boundary windows test the step at v* (the session at it, the first one after it);
on their own they let a policy that never rolls back and answers the items of some
sessions only (say, the even ones) score on every query whose v* falls on the right
parity. Far probes close that: on the keep side, the answerable items of every earlier
session; on the forget side, the items of every session after the first one after v*.
A query draws at most ``max_far`` of them per side, spread over sessions so that no
single session dominates (round robin over the sessions, each session's items and the
sessions themselves in a seeded order of (stream, v*, item)).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any

from chronobench.data.schema import Stream
from chronobench.hashing import stable_hash
from data_builders.boundary import novel_enough, stems_upto
from data_builders.pools import PoolFact, ProbePool, ranked

__all__ = ["far_recall_side", "session_starts", "spread", "unit_of"]


def session_starts(pool: ProbePool, stream: Stream) -> list[int]:
    """First version of each session in order (each write is a unit when there are none)."""
    if pool.sessions:
        return sorted(s.first_version for s in pool.sessions)
    return list(range(1, stream.n_versions + 1))


def unit_of(starts: Sequence[int], version: int) -> int:
    """Index of the session holding ``version`` (0 before the first one)."""
    return max(bisect_right(starts, version) - 1, 0)


def spread(
    items: list[Any],
    unit: Callable[[Any], int],
    key_of: Callable[[Any], str],
    pool: ProbePool,
    v_star: int,
    cap: int,
) -> list[tuple[Any, int]]:
    """Up to ``cap`` of ``items`` with their session index, one per session in turn."""
    if cap <= 0 or not items:
        return []
    groups: dict[int, list[Any]] = {}
    for it in items:
        groups.setdefault(unit(it), []).append(it)
    order = sorted(
        groups, key=lambda u: (stable_hash(pool.seed, pool.stream_id, v_star, "unit", u), u)
    )
    queues = {u: ranked(groups[u], key_of, pool, v_star) for u in order}
    out: list[tuple[Any, int]] = []
    depth = 0
    while len(out) < cap and any(depth < len(q) for q in queues.values()):
        for u in order:
            if depth < len(queues[u]) and len(out) < cap:
                out.append((queues[u][depth], u))
        depth += 1
    return out


def far_recall_side(
    f: PoolFact,
    pool: ProbePool,
    stream: Stream,
    v_star: int,
    starts: Sequence[int],
    before: tuple[int, int] | None,
    after: tuple[int, int] | None,
) -> str | None:
    """``"before"`` for a statement wholly in a session before the one at v* that says
    enough its own session's past lacked (the test it passes as a near probe there);
    ``"after"`` for one starting after the first session after v* with enough content
    the memory up to v* lacks; None otherwise."""
    names = tuple(pool.speakers)
    if before is not None and f.hi < before[0]:
        first = starts[unit_of(starts, f.lo)]
        if unit_of(starts, f.hi) != unit_of(starts, f.lo):
            return None
        known = stems_upto(stream, first - 1, names)
        return "before" if novel_enough(f.statement, known, pool.speakers) else None
    if after is not None and f.lo > after[1]:
        known = stems_upto(stream, v_star, names)
        return "after" if novel_enough(f.statement, known, pool.speakers) else None
    return None
