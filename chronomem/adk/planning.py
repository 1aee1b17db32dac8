"""The report agents and apps get from a rollback through the ADK service.

Planning itself is the store's: ``ChronoMem.plan_rollback_by_nl_query`` chooses the
version (writing nothing) and raises ``UncertainRequestError`` for a request it
cannot map with confidence; the service applies exactly the plan it previewed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chronomem import UncertainRequestError

__all__ = ["RollbackReport", "UncertainRequestError"]


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
