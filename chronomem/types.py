"""Records and errors returned by the ChronoMem store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

RollbackMode = Literal["truncate", "revert"]
OPS = ("add", "update", "delete", "consolidate", "revert", "redact")
REDACTED = "[redacted]"  # what erased content is replaced by wherever text quoted it


class Scope(NamedTuple):
    """A scope's row in ``scopes`` (one (app, user) pair), read once per request."""

    scope_id: int
    head_vid: int  # HEAD's version id (0: the empty root)
    head_seq: int  # HEAD's seq on the linear history
    gen: int  # bumped by every change, so in-process caches can tell they are stale


class ChronoMemError(Exception):
    """Base class of the store's errors."""


class UnknownVersionError(ChronoMemError, KeyError):
    """A version id that is not on the scope's current history."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown version"


class HeadMovedError(ChronoMemError):
    """A planned rollback found HEAD moved (another writer committed or rolled back in
    between); nothing was changed."""


class StoreConnectionError(ChronoMemError, ConnectionError):
    """The database server cannot be reached, or the connection to it broke (the
    store reconnects on its next call); the message says whether a write may have
    been applied."""


class StoreBusyError(ChronoMemError, TimeoutError):
    """Another writer held the scope (or a table) longer than the store's busy
    timeout; nothing was changed."""


class EmptyScopeError(ChronoMemError):
    """A rollback or resolve on a scope that has no committed version."""


class DependentChangesError(ChronoMemError, ValueError):
    """A selective revert where later commits changed what the reverted commits wrote, and
    the caller did not choose between keeping the later text and dropping those commits;
    ``conflicts`` lists them. Nothing was changed."""

    def __init__(self, message: str, conflicts: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.conflicts = list(conflicts or [])


class UnknownBranchError(ChronoMemError, KeyError):
    """A branch name that the scope does not have (or no longer has: deleted)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown branch"


class MergeConflictError(ChronoMemError, ValueError):
    """A merge where both branches changed an item differently since their common
    ancestor and the caller resolved it with none of ours, theirs or a given text;
    ``conflicts`` lists them (item, base, ours, theirs). Nothing was written."""

    def __init__(self, message: str, conflicts: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.conflicts = list(conflicts or [])


class InvalidOpError(ChronoMemError, ValueError):
    """A memory op that is malformed (unknown op name, missing item id or text)."""


class UncertainRequestError(ChronoMemError, ValueError):
    """An NL rollback request whose match is not confident (no content words, no
    lexical or dense evidence, or a near-tie); nothing was changed."""


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
    confidence: float = 1.0
    runner_up: tuple[int, float] | None = None
    discarded_versions: list[int] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)  # the plan's (see RollbackPlan)


@dataclass(frozen=True)
class RollbackPlan:
    """What an NL rollback would do, computed without writing anything.

    ``matched_version`` is the commit the request describes, ``target_version``
    the version it would restore; ``confidence`` in [0, 1] (see
    :meth:`ChronoMem.plan_rollback_by_nl_query` for the rule); ``runner_up`` is the
    next-best distinct target and its score; ``discarded_versions`` the versions a
    truncate to the target would discard, oldest first.
    """

    query: str
    intent: str
    matched_version: int
    target_version: int
    confidence: float
    runner_up: tuple[int, float] | None
    discarded_versions: list[int]
    candidates: list[tuple[int, float]]
    mode: str = "truncate"
    evidence: dict[str, Any] = field(default_factory=dict)
    head: int | None = None  # HEAD when planned: applying refuses if it has moved since

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict of the plan."""
        return {
            "query": self.query,
            "intent": self.intent,
            "matched_version": int(self.matched_version),
            "target_version": int(self.target_version),
            "confidence": float(self.confidence),
            "runner_up": None
            if self.runner_up is None
            else [int(self.runner_up[0]), float(self.runner_up[1])],
            "discarded_versions": [int(v) for v in self.discarded_versions],
            "candidates": [[int(v), float(s)] for v, s in self.candidates],
            "mode": self.mode,
            "evidence": dict(self.evidence),
            "head": None if self.head is None else int(self.head),
        }


@dataclass(frozen=True)
class SelectivePlan:
    """What a selective revert does (:meth:`ChronoMem.revert_commits`), computed without
    writing (``new_head`` None) or as applied (``new_head`` the revert version).

    ``versions``: the commits asked for; ``reverted``: those plus their dependents, in
    history order; ``dependents``: ``{version, why, items}`` (``why``: "derived", a
    consolidate that merged a reverted item, or "later change" under ``drop``);
    ``conflicts``: later commits that changed a reverted item, ``{version, items,
    resolution}`` ("kept" or "dropped"); ``removed``: items that go; ``restored``: items
    that get an earlier text back (``{item: text}``); ``kept``: items whose later text
    stays; ``erased_texts``: what ``redact=True`` erases. An NL plan also carries the
    request, its ``confidence`` and ``evidence`` (``matched``: the commits the request
    names, with their scores).
    """

    versions: list[int]
    reverted: list[int]
    dependents: list[dict[str, Any]]
    conflicts: list[dict[str, Any]]
    removed: list[str]
    restored: dict[str, str]
    kept: list[str]
    with_dependents: str
    head: int
    erased_texts: list[str] = field(default_factory=list)
    new_head: int | None = None
    query: str | None = None
    confidence: float = 1.0
    evidence: dict[str, Any] = field(default_factory=dict)

    def applied(self, new_head: int) -> SelectivePlan:
        """This plan, applied: ``new_head`` is the revert version."""
        from dataclasses import replace

        return replace(self, new_head=int(new_head))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (the erased texts are counted, not quoted)."""
        return {
            "versions": list(self.versions),
            "reverted": list(self.reverted),
            "dependents": [dict(d) for d in self.dependents],
            "conflicts": [dict(c) for c in self.conflicts],
            "removed": list(self.removed),
            "restored": dict(self.restored),
            "kept": list(self.kept),
            "with_dependents": self.with_dependents,
            "head": int(self.head),
            "erased_texts": len(self.erased_texts),
            "new_head": self.new_head,
            "query": self.query,
            "confidence": float(self.confidence),
            "evidence": dict(self.evidence),
        }


@dataclass(frozen=True)
class NormalOp:
    """A validated memory op (internal form of MemoryOp / mapping input)."""

    op: str
    item_id: str
    text: str | None
    meta: dict[str, Any]
