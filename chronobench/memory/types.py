"""Records and errors returned by the ChronoMem store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

RollbackMode = Literal["truncate", "revert"]
OPS = ("add", "update", "delete", "consolidate", "revert", "redact")


class ChronoMemError(Exception):
    """Base class of the store's errors."""


class UnknownVersionError(ChronoMemError, KeyError):
    """A version id that is not on the scope's current history."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown version"


class EmptyScopeError(ChronoMemError):
    """A rollback or resolve on a scope that has no committed version."""


class InvalidOpError(ChronoMemError, ValueError):
    """A memory op that is malformed (unknown op name, missing item id or text)."""


@dataclass(frozen=True)
class VersionRecord:
    """One version on the scope's linear history (seq 0 is the empty root)."""

    version_id: int
    seq: int
    parent: int | None
    op: str
    summary: str | None
    labels: dict[str, Any]
    created: float
    source: str | None = None
    reason: str | None = None
    valid_time: str | None = None
    descriptor: str = ""


@dataclass(frozen=True)
class SearchHit:
    """An item of S(HEAD) returned by :meth:`ChronoMem.search`."""

    item_id: str
    text: str
    score: float


@dataclass
class RollbackResult:
    """Outcome of :meth:`ChronoMem.rollback_to_version_by_nl_query`.

    ``matched_version`` is the commit the query describes; ``target_version`` is
    what was restored (its parent for ``undo``, itself for ``restore_to``).
    """

    query: str
    intent: str
    matched_version: int
    target_version: int
    head: int
    mode: str
    candidates: list[tuple[int, float]] = field(default_factory=list)


@dataclass(frozen=True)
class NormalOp:
    """A validated memory op (internal form of MemoryOp / mapping input)."""

    op: str
    item_id: str
    text: str | None
    meta: dict[str, Any]
