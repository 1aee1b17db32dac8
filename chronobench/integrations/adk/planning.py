"""Rollback planning for the ADK service: the store's plan, and the report agents read.

The store implements ``plan_rollback_by_nl_query`` (a plan that writes nothing) and
raises ``UncertainRequestError`` for requests it cannot map with confidence. Until a
store without that method is in use, :func:`plan` falls back to a thin plan built from
the store's public ``resolve`` (two calls: the described commit, then the target).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from chronobench.memory import ChronoMemError

try:  # the store's error when it has one, so callers catch a single type
    from chronobench.memory import UncertainRequestError
except ImportError:  # pragma: no cover - only with a store that predates the contract

    class UncertainRequestError(ChronoMemError, ValueError):  # type: ignore[no-redef]
        """A rollback request that does not identify a version with confidence."""


@dataclass(frozen=True)
class FallbackPlan:
    """The fields of the store's ``RollbackPlan`` that the service reads."""

    query: str
    intent: str
    matched_version: int
    target_version: int
    confidence: float
    runner_up: tuple[int, float] | None
    discarded_versions: list[int]
    candidates: list[tuple[int, float]]
    mode: str


def _fallback(store: Any, app: str, user: str, request: str, intent: str | None, k: int, mode: str):
    from chronobench.memory.query import content_query, detect_intent

    if not re.search(r"\w", content_query(request)):
        raise UncertainRequestError(
            f"the request {request[:80]!r} does not say what to roll back; name the fact or "
            "conversation to undo (e.g. 'undo what I said about my address')"
        )
    intent = intent or detect_intent(request)
    described = store.resolve(app, user, request, k + 1, intent="restore_to")
    targets = store.resolve(app, user, request, k + 1, intent=intent)
    if not targets or not described:
        raise UncertainRequestError(f"no version matches {request[:80]!r}; nothing to roll back")
    target = targets[0][0]
    runner = next(((v, float(s)) for v, s in targets[1:] if v != target), None)
    top = float(targets[0][1])
    conf = 1.0 if runner is None or top <= 0 else top / (top + max(runner[1], 0.0))
    seqs = [r.version_id for r in store.versions(app, user)]
    discarded = seqs[seqs.index(target) + 1 :] if target in seqs else []
    return FallbackPlan(
        request, intent, described[0][0], target, conf, runner, discarded, targets[:k], mode
    )


def plan(
    store: Any,
    app: str,
    user: str,
    request: str,
    *,
    intent: str | None = None,
    k: int = 5,
    mode: str = "truncate",
) -> Any:
    """A rollback plan for ``request`` (writes nothing); raises UncertainRequestError."""
    fn = getattr(store, "plan_rollback_by_nl_query", None)
    if fn is not None:
        return fn(app, user, request, intent=intent, k=k, mode=mode)
    return _fallback(store, app, user, request, intent, k, mode)


@dataclass(frozen=True)
class RollbackReport:
    """What a rollback through the service chose and did (or, for a preview, would do).

    ``version`` is the restored (or to-be-restored) version; ``matched_version`` the
    commit the request describes; ``discarded`` the later versions whose effects are
    (or would be) undone, oldest first, each ``{"version", "summary"}``. ``head`` is
    HEAD after the call (unchanged for a preview).
    """

    request: str | None
    intent: str | None
    version: int
    matched_version: int | None
    confidence: float | None
    runner_up: tuple[int, float] | None
    discarded: list[dict[str, Any]]
    mode: str
    applied: bool
    head: int
    candidates: list[tuple[int, float]] = field(default_factory=list)

    @property
    def discarded_versions(self) -> list[int]:
        """Version numbers of :attr:`discarded`."""
        return [d["version"] for d in self.discarded]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (what the ADK tools return to the model)."""
        return {
            "request": self.request,
            "intent": self.intent,
            "version": self.version,
            "matched_version": self.matched_version,
            "confidence": None if self.confidence is None else round(self.confidence, 4),
            "runner_up": list(self.runner_up) if self.runner_up else None,
            "discarded": [dict(d) for d in self.discarded],
            "mode": self.mode,
            "applied": self.applied,
            "head": self.head,
            "candidates": [[int(v), round(float(s), 6)] for v, s in self.candidates],
        }
