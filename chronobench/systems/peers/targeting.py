"""Own targeting: a peer locates the described write with its own search, then the
request's intent turns that write into a version to restore.

The same for every peer (and ChronoMem's peer row): search the request text, take the
best memory's write version ``j``, restore ``j - 1`` for ``undo`` and ``j`` for
``restore_to``. The intent comes from chronobench's request rules
(:func:`chronomem.detect_intent`), since no peer reads rollback requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chronobench.systems.peers.base import PeerMemory

DEFAULT_DEPTH = 10


@dataclass
class Targeting:
    """The version a peer's own search points to (``None``: its search found nothing
    that carries a version, so nothing is rolled back)."""

    version: int | None
    intent: str
    candidates: list[tuple[int, float]] = field(default_factory=list)


def own_target(peer: PeerMemory, request: str, *, depth: int = DEFAULT_DEPTH) -> Targeting:
    """Search ``request`` with the peer's search; map the ranked write versions through
    the request's intent. Candidates keep their best score, best first."""
    from chronomem import detect_intent

    intent = detect_intent(request)
    candidates: dict[int, float] = {}
    for hit in peer.search(request, depth):
        if hit.version is None:
            continue
        target = hit.version - 1 if intent == "undo" else hit.version
        if target >= 0 and target not in candidates:
            candidates[target] = hit.score
    ranked = list(candidates.items())
    return Targeting(ranked[0][0] if ranked else None, intent, ranked)
