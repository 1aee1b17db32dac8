"""The forget policies RQ4's audit runs through the real harness (:mod:`chronobench.tracks.selective.audit`).

Each is a :data:`chronobench.systems.forgetting.Policy`: it reverts turns of a ChronoMem
copy the way a row would, and the runner scores what is left exactly as it scores a row.
Error curves take the required set through the RQ4 oracle channel and add ``k`` wrong
actions; attacks either skip the request (request-blind) or do more than it asks.
"""

from __future__ import annotations

import random
from typing import Any

from chronobench.hashing import stable_hash
from chronobench.systems.base import APP

__all__ = [
    "fraction",
    "gold_kept",
    "gold_plus_random",
    "gold_plus_similar",
    "hit_and_neighbours",
    "prefix_of_stream",
    "prefix_to_top_hit",
    "top_k",
]


def _writes(sysm: Any) -> list[int]:
    return sorted(set(sysm.item_write.values()))


def _rng(sysm: Any, *key: Any) -> random.Random:
    return random.Random(stable_hash(sysm.seed, sysm.stream_key, "rq4-audit", *key))


def _hits(sysm: Any, work: Any, request: str, k: int, mode: str = "hybrid") -> list[int]:
    hits = work.search(APP, sysm.ingested.user, request, k, mode=mode)
    out: list[int] = []
    for h in hits:
        j = sysm.item_write.get(h.item_id)
        if j is not None and j not in out:
            out.append(j)
    return out


def gold_plus_random(k: int) -> Any:
    """Curve: the required set plus ``k`` seeded random turns outside it."""

    def policy(sysm: Any, work: Any, request: str, gold: Any) -> dict[str, Any]:
        rest = [j for j in _writes(sysm) if j not in gold]
        extra = _rng(sysm, "random", request).sample(rest, min(k, len(rest)))
        return sysm.revert(work, sorted(set(gold) | set(extra)))

    return policy


def gold_plus_similar(k: int) -> Any:
    """Curve: the required set plus the ``k`` turns outside it that ChronoMem's hybrid
    search ranks first for the request (the most plausible wrong removals)."""

    def policy(sysm: Any, work: Any, request: str, gold: Any) -> dict[str, Any]:
        hits = [j for j in _hits(sysm, work, request, k + len(gold) + 5) if j not in gold]
        return sysm.revert(work, sorted(set(gold) | set(hits[:k])))

    return policy


def gold_kept(k: int, order: dict[str, list[int]]) -> Any:
    """Curve: the required set less ``k`` of its turns, kept (``order``: per request,
    the turns the anchor's forget questions cite first)."""

    def policy(sysm: Any, work: Any, request: str, gold: Any) -> dict[str, Any]:
        first = order.get(request) or sorted(gold)
        keep = set(first[:k])
        return sysm.revert(work, sorted(j for j in gold if j not in keep))

    return policy


def top_k(k: int, mode: str) -> Any:
    """Over-action: delete the top ``k`` hits of ChronoMem's ``mode`` search (lexical =
    BM25, dense, hybrid) for the request."""

    def policy(sysm: Any, work: Any, request: str, gold: Any) -> dict[str, Any]:
        return sysm.revert(work, _hits(sysm, work, request, k, mode))

    return policy


def prefix_to_top_hit(sysm: Any, work: Any, request: str, gold: Any) -> dict[str, Any]:
    """Prefix deletion: the top hybrid hit and every turn before it."""
    hits = _hits(sysm, work, request, 1)
    return sysm.revert(work, [j for j in _writes(sysm) if hits and j <= hits[0]])


def hit_and_neighbours(sysm: Any, work: Any, request: str, gold: Any) -> dict[str, Any]:
    """Surface rule: the top BM25 hit for the request and the turns right before and
    after it (the required set adds a turn that echoes the anchor's words; this guesses
    that it is a neighbour without reading it)."""
    hits = _hits(sysm, work, request, 1, "lexical")
    every = set(_writes(sysm))
    return sysm.revert(work, sorted({j + d for j in hits for d in (-1, 0, 1)} & every))


def fraction(share: float) -> Any:
    """Request-blind: a seeded ``share`` of the stream's turns (the same for every
    request of the stream)."""

    def policy(sysm: Any, work: Any, request: str, gold: Any) -> dict[str, Any]:
        writes = _writes(sysm)
        rng = _rng(sysm, "fraction", share)
        return sysm.revert(work, sorted(rng.sample(writes, int(share * len(writes)))))

    return policy


def prefix_of_stream(share: float) -> Any:
    """Request-blind: the first ``share`` of the stream's turns."""

    def policy(sysm: Any, work: Any, request: str, gold: Any) -> dict[str, Any]:
        writes = _writes(sysm)
        return sysm.revert(work, writes[: max(1, int(share * len(writes)))])

    return policy
