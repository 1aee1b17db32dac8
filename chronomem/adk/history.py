"""Versions and rollback of :class:`ChronoMemMemoryService` (async API and sync twins).

The async methods are what agents and apps call (keyword arguments, like ADK's
memory API); each ``*_sync`` twin does the work without an event loop (tools run it
in a worker thread; the benchmark calls it directly).
"""

from __future__ import annotations

import asyncio
from typing import Any

from chronomem.adk import convert as cv
from chronomem.adk.planning import RollbackReport
from chronomem.types import HeadMovedError

_MODES = ("truncate", "revert")


def check_scope(app_name: Any, user_id: Any) -> None:
    """ValueError naming ``app_name`` / ``user_id`` unless both are non-empty strings."""
    for name, value in (("app_name", app_name), ("user_id", user_id)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")


def check_mode(mode: Any) -> None:
    """ValueError unless ``mode`` is ``truncate`` or ``revert``."""
    if mode not in _MODES:
        raise ValueError(f"mode must be 'truncate' or 'revert', got {mode!r}")


def _summary(record: Any, limit: int = 160) -> str:
    """One line saying what a version did: its summary, else the start of its delta."""
    if record.seq == 0:
        return "empty memory (before the first write)"
    # Cut before flattening: a descriptor can hold a whole session.
    text = record.summary or record.descriptor[: 2 * limit].replace("\n", "; ") or record.op
    return cv.short(text, limit)


class HistoryMixin:
    """Needs ``self.store`` (a ChronoMem) and ``self._write_lock``."""

    store: Any
    _write_lock: Any

    async def list_versions(self, *, app_name: str, user_id: str) -> list[dict[str, Any]]:
        """The versions on the history, oldest first (0 is the empty root): each has
        ``version``, ``time`` (ISO 8601, UTC), ``summary``, ``op``, ``session`` and
        ``head`` (True for the current one)."""
        return await asyncio.to_thread(self.versions_sync, app_name, user_id)

    def versions_sync(self, app_name: str, user_id: str) -> list[dict[str, Any]]:
        """:meth:`list_versions` without the event loop."""
        check_scope(app_name, user_id)
        head = self.store.head(app_name, user_id)
        out = []
        for r in self.store.versions(app_name, user_id):
            out.append(
                {
                    "version": int(r.version_id),
                    "time": cv.iso_time(r.created) if r.created else None,
                    "summary": _summary(r),
                    "op": r.op,
                    "session": (r.labels or {}).get("session"),
                    "head": r.version_id == head,
                }
            )
        return out

    async def head(self, *, app_name: str, user_id: str) -> int:
        """HEAD's version number (0 before the first write)."""
        check_scope(app_name, user_id)
        return await asyncio.to_thread(self.store.head, app_name, user_id)

    # -- rollback ---------------------------------------------------------------------------

    async def rollback(
        self,
        *,
        app_name: str,
        user_id: str,
        request: str,
        preview: bool = False,
        mode: str = "truncate",
        intent: str | None = None,
    ) -> RollbackReport:
        """Roll back to the version a plain-words ``request`` describes.

        ``preview=True`` writes nothing and reports what would happen. A request that
        names nothing, or is ambiguous, raises ``UncertainRequestError`` (a ValueError)
        and changes nothing. ``mode``: ``truncate`` drops the later versions, ``revert``
        appends a version equal to the target (the undo can itself be undone).
        """
        return await asyncio.to_thread(
            self.rollback_sync, app_name, user_id, request, preview, mode, intent
        )

    def rollback_sync(
        self,
        app_name: str,
        user_id: str,
        request: str,
        preview: bool = False,
        mode: str = "truncate",
        intent: str | None = None,
    ) -> RollbackReport:
        """:meth:`rollback` without the event loop."""
        check_scope(app_name, user_id)
        check_mode(mode)
        if not isinstance(request, str):
            raise TypeError(f"request must be a string, got {type(request).__name__}")
        with self._write_lock:
            p = self.store.plan_rollback_by_nl_query(
                app_name, user_id, request, intent=intent, mode=mode
            )
            target = int(p.target_version)
            discarded = self._describe(app_name, user_id, [int(v) for v in p.discarded_versions])
            if not preview:
                # expected_head: another process's write since the plan refuses it
                # (HeadMovedError), this service's lock only covers its own threads.
                self.store.rollback_to_version(
                    app_name,
                    user_id,
                    target,
                    mode=mode,
                    reason="adk rollback: " + request[:200].replace("\x00", "\ufffd"),
                    expected_head=p.head,
                )
            head = self.store.head(app_name, user_id)
        return RollbackReport(
            request=request,
            intent=p.intent,
            version=target,
            matched_version=int(p.matched_version),
            confidence=float(p.confidence),
            runner_up=(int(p.runner_up[0]), float(p.runner_up[1])) if p.runner_up else None,
            discarded=discarded,
            mode=mode,
            applied=not preview,
            head=int(head),
            candidates=[(int(v), float(s)) for v, s in p.candidates],
        )

    async def rollback_to_version(
        self, *, app_name: str, user_id: str, version: int, mode: str = "revert"
    ) -> RollbackReport:
        """Restore ``version`` (default ``revert``: a new version equal to it, nothing lost)."""
        return await asyncio.to_thread(self.restore_sync, app_name, user_id, version, mode)

    def restore_sync(
        self,
        app_name: str,
        user_id: str,
        version: int,
        mode: str = "revert",
        head: int | None = None,
    ) -> RollbackReport:
        """:meth:`rollback_to_version` without the event loop; with ``head``, only if HEAD
        is still that version (raises ``RuntimeError`` otherwise, changing nothing)."""
        check_scope(app_name, user_id)
        check_mode(mode)
        if isinstance(version, bool) or not isinstance(version, int):
            raise TypeError(f"version must be an integer, got {version!r}")
        with self._write_lock:
            now = self.store.head(app_name, user_id)
            if head is not None and now != head:
                raise RuntimeError(
                    f"memory changed since the preview (HEAD was {head}, now {now}); "
                    "preview the rollback again"
                )
            ids = [r.version_id for r in self.store.versions(app_name, user_id)]
            later = ids[ids.index(version) + 1 :] if version in ids else []
            discarded = self._describe(app_name, user_id, later)
            try:  # the check above, again atomically with the write (other processes)
                new_head = self.store.rollback_to_version(
                    app_name,
                    user_id,
                    version,
                    mode=mode,
                    reason=f"adk rollback_to_version {version}",
                    expected_head=head,
                )
            except HeadMovedError as exc:
                raise RuntimeError(
                    f"memory changed since the preview ({exc}); preview the rollback again"
                ) from exc
        return RollbackReport(
            request=None,
            intent=None,
            version=version,
            matched_version=None,
            confidence=None,
            runner_up=None,
            discarded=discarded,
            mode=mode,
            applied=True,
            head=int(new_head),
        )

    def _describe(self, app: str, user: str, versions: list[int]) -> list[dict[str, Any]]:
        if not versions:
            return []
        wanted = set(versions)
        by_id = {
            r.version_id: _summary(r)
            for r in self.store.versions(app, user)
            if r.version_id in wanted
        }
        return [{"version": v, "summary": by_id.get(v, "")} for v in versions]
