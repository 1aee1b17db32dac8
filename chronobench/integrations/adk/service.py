"""``ChronoMemMemoryService``: ChronoMem behind Google ADK's ``BaseMemoryService``.

Every write is a ChronoMem commit (one version per call), so anything an agent or
app writes, deletes included, can be rolled back. ``search_memory`` reads HEAD only.

Mapping:

- a memory is a ChronoMem item; its id is the ADK event id (or ``MemoryEntry.id``);
- ``add_session_to_memory`` / ``add_events_to_memory`` commit the new text-bearing
  events of the call as one version labelled ``{"session": <session id>}`` (the
  store's episode label, so "undo that whole conversation" means that session);
- an event id ingested once is never ingested again, even after it was deleted or
  rolled back: apps re-add the whole session after every turn, and a rolled-back
  fact must not come back that way (ADK's own services do the same for deletes);
- events of a turn in which the agent used the undo or history tools are not
  memorised: that turn quotes what is being undone (see ``previews.py``);
- only text parts are kept (joined by newlines; thoughts skipped); a returned entry
  has one text part, the original author, role and ISO timestamp.

Threads: writes are serialised by one lock (check-then-commit must be atomic);
searches only read. Blocking work runs in a worker thread (``asyncio.to_thread``)
so the event loop keeps serving while a commit embeds its descriptor.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from chronobench.integrations.adk import convert as cv
from chronobench.integrations.adk.ledger import Ledger
from chronobench.integrations.adk.matching import MatchIndex, parse_query
from chronobench.integrations.adk.planning import RollbackReport, plan
from chronobench.integrations.adk.previews import PreviewBook
from chronobench.memory import ChronoMem

_MODES = ("truncate", "revert")


def _check_scope(app_name: Any, user_id: Any) -> None:
    for name, value in (("app_name", app_name), ("user_id", user_id)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")


def _check_mode(mode: Any) -> None:
    if mode not in _MODES:
        raise ValueError(f"mode must be 'truncate' or 'revert', got {mode!r}")


class ChronoMemMemoryService(BaseMemoryService):
    """A versioned ADK memory service: every write is a commit that can be rolled back.

    Args:
        db_path: SQLite file for the store, or ``":memory:"``.
        max_results: most memories one ``search_memory`` returns.
        store: an existing :class:`~chronobench.memory.ChronoMem` to wrap instead
            (then ``db_path`` and ``chronomem_options`` must be left out).
        **chronomem_options: passed to ``ChronoMem`` (``embedder``, ``reranker``...).
    """

    def __init__(
        self,
        db_path: str = ":memory:",
        *,
        max_results: int = 10,
        store: ChronoMem | None = None,
        **chronomem_options: Any,
    ) -> None:
        if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 1:
            raise ValueError(f"max_results must be a positive integer, got {max_results!r}")
        if store is not None:
            if chronomem_options or db_path != ":memory:":
                raise ValueError(
                    "pass either store= or db_path/ChronoMem options, not both "
                    f"(got db_path={db_path!r}, options {sorted(chronomem_options)})"
                )
            self.store, self._owns_store = store, False
        else:
            # An unknown option raises ChronoMem's own TypeError, which names it.
            self.store, self._owns_store = ChronoMem(db_path, **chronomem_options), True
        self.max_results = max_results
        self.ledger = Ledger(self.store.path)
        self._write_lock = threading.RLock()
        self._match = MatchIndex()
        self.previews = PreviewBook()

    # -- writes -----------------------------------------------------------------------------

    async def add_session_to_memory(self, session: Any) -> None:
        """Commit the session's text-bearing events not ingested before (one version)."""
        state = getattr(session, "state", None) or {}
        extra = state.get(cv.SESSION_LABELS_KEY) if isinstance(state, Mapping) else None
        meta = cv.read_metadata({"labels": extra} if extra is not None else None)
        await asyncio.to_thread(
            self._ingest,
            session.app_name,
            session.user_id,
            list(session.events),
            session.id,
            meta,
            "add_session_to_memory",
        )

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Any],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Commit a delta of events (one version). ``custom_metadata`` may carry commit
        ``labels`` (mapping), ``summary`` and ``reason`` (strings); other keys are ignored."""
        meta = cv.read_metadata(custom_metadata)
        await asyncio.to_thread(
            self._ingest, app_name, user_id, list(events), session_id, meta, "add_events_to_memory"
        )

    def _ingest(
        self,
        app: str,
        user: str,
        events: list[Any],
        session_id: str | None,
        meta: dict[str, Any],
        how: str,
    ) -> int | None:
        _check_scope(app, user)
        found: dict[str, cv.Candidate] = {}
        for event in events:  # copied into strings here: later mutation cannot reach the store
            if self.previews.is_quiet(getattr(event, "invocation_id", None)):
                continue  # a turn that previewed/confirmed an undo quotes the undone facts
            c = cv.event_candidate(event, session_id)
            if c is not None and c.memory_id not in found:
                found[c.memory_id] = c
        if not found:
            return None
        with self._write_lock:
            known = self.ledger.known(app, user, found)
            new = [c for mid, c in found.items() if mid not in known]
            if not new:
                return None
            labels = {"session": session_id} if session_id else {}
            labels.update(meta.get("labels", {}))
            times = [c.time for c in new if c.time is not None]
            ops = [{"op": "add", "item_id": c.memory_id, "text": c.text} for c in new]
            return self._commit(
                app,
                user,
                new,
                ops,
                reason=meta.get("reason") or f"{how} session={session_id}",
                labels=labels,
                summary=meta.get("summary"),
                valid_time=cv.iso_time(max(times)) if times else None,
            )

    def _commit(self, app: str, user: str, cands: list[cv.Candidate], ops: list[dict], **kw: Any):
        # Ledger first: if the commit then fails, the rows are removed again, so an event
        # is never marked as ingested without being in the store.
        self.ledger.record(app, user, [c.row for c in cands])
        try:
            return self.store.commit(app, user, ops, source="adk", **kw)
        except BaseException:
            self.ledger.forget(app, user, [c.memory_id for c in cands])
            raise

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Write explicit memories (one version): a new id is added, a known id with new
        text is updated, an unchanged one is skipped. An explicit write may re-add an id
        that was deleted or rolled back."""
        meta = cv.read_metadata(custom_metadata)
        await asyncio.to_thread(self._add_memory, app_name, user_id, list(memories), meta)

    def _add_memory(self, app: str, user: str, memories: list[Any], meta: dict) -> int | None:
        _check_scope(app, user)
        found: dict[str, cv.Candidate] = {}
        for i, entry in enumerate(memories):
            c = cv.entry_candidate(entry, i)
            if c is not None:
                found[c.memory_id] = c  # the last entry with an id wins
        if not found:
            return None
        with self._write_lock:
            head = self.store.snapshot(app, user)
            todo = [c for c in found.values() if head.get(c.memory_id) != c.text]
            if not todo:
                return None
            ops = [
                {
                    "op": "update" if c.memory_id in head else "add",
                    "item_id": c.memory_id,
                    "text": c.text,
                }
                for c in todo
            ]
            return self._commit(
                app,
                user,
                todo,
                ops,
                reason=meta.get("reason") or "add_memory",
                labels=meta.get("labels", {}),
                summary=meta.get("summary"),
            )

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Delete one memory from HEAD (a commit: the delete itself can be rolled back)."""
        if not memory_id:
            return
        await asyncio.to_thread(self._delete, app_name, user_id, [memory_id])

    async def delete_memories(
        self, *, app_name: str, user_id: str, memory_ids: Sequence[str]
    ) -> None:
        """Delete several memories from HEAD in one version (ids not at HEAD are skipped)."""
        if isinstance(memory_ids, str):
            raise TypeError("memory_ids must be a sequence of ids, not one string")
        await asyncio.to_thread(self._delete, app_name, user_id, [m for m in memory_ids if m])

    def _delete(self, app: str, user: str, ids: list[str]) -> int | None:
        _check_scope(app, user)
        for mid in ids:
            if not isinstance(mid, str):
                raise TypeError(f"memory ids are strings, got {mid!r}")
        with self._write_lock:
            head = self.store.snapshot(app, user)
            gone = [m for m in dict.fromkeys(ids) if m in head]
            if not gone:
                return None
            ops = [{"op": "delete", "item_id": m} for m in gone]
            return self.store.commit(app, user, ops, source="adk", reason="delete_memory")

    # -- reads ------------------------------------------------------------------------------

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """Memories at HEAD sharing words with ``query``, most matched words first."""
        return await asyncio.to_thread(self.search_sync, app_name, user_id, query)

    def search_sync(self, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """:meth:`search_memory` without the event loop (benchmarks, scripts)."""
        _check_scope(app_name, user_id)
        q = parse_query(query)
        if not q:
            return SearchMemoryResponse()
        head = self.store.snapshot(app_name, user_id)
        ids, texts = list(head), list(head.values())
        chosen = self._match.rank(q, texts, self.max_results)
        rows = self.ledger.get(app_name, user_id, [ids[i] for i in chosen])
        out = []
        for i in chosen:
            row = rows.get(ids[i])
            custom = dict(row.custom_metadata) if row else {}
            if row and row.session_id:
                custom.setdefault("session_id", row.session_id)
            out.append(
                MemoryEntry(
                    id=ids[i],
                    content=types.Content(
                        role=(row.role if row else None) or "user",
                        parts=[types.Part(text=texts[i])],
                    ),
                    author=row.author if row else None,
                    timestamp=row.timestamp if row else None,
                    custom_metadata=custom,
                )
            )
        return SearchMemoryResponse(memories=out)

    async def list_versions(self, *, app_name: str, user_id: str) -> list[dict[str, Any]]:
        """The versions on the history, oldest first (0 is the empty root): each has
        ``version``, ``time`` (ISO 8601, UTC), ``summary``, ``op``, ``session`` and
        ``head`` (True for the current one)."""
        return await asyncio.to_thread(self.versions_sync, app_name, user_id)

    def versions_sync(self, app_name: str, user_id: str) -> list[dict[str, Any]]:
        """:meth:`list_versions` without the event loop."""
        _check_scope(app_name, user_id)
        head = self.store.head(app_name, user_id)
        out = []
        for r in self.store.versions(app_name, user_id):
            if r.seq == 0:
                summary = "empty memory (before the first write)"
            else:
                summary = cv.short(r.summary or r.descriptor.replace("\n", "; ") or r.op)
            out.append(
                {
                    "version": int(r.version_id),
                    "time": cv.iso_time(r.created) if r.created else None,
                    "summary": summary,
                    "op": r.op,
                    "session": (r.labels or {}).get("session"),
                    "head": r.version_id == head,
                }
            )
        return out

    async def head(self, *, app_name: str, user_id: str) -> int:
        """HEAD's version number (0 before the first write)."""
        _check_scope(app_name, user_id)
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
        _check_scope(app_name, user_id)
        _check_mode(mode)
        if not isinstance(request, str):
            raise TypeError(f"request must be a string, got {type(request).__name__}")
        with self._write_lock:
            p = plan(self.store, app_name, user_id, request, intent=intent, mode=mode)
            target = int(p.target_version)
            discarded = self._describe(app_name, user_id, [int(v) for v in p.discarded_versions])
            if not preview:
                self.store.rollback_to_version(
                    app_name, user_id, target, mode=mode, reason=f"adk rollback: {request[:200]}"
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
        _check_scope(app_name, user_id)
        _check_mode(mode)
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
            new_head = self.store.rollback_to_version(
                app_name, user_id, version, mode=mode, reason=f"adk rollback_to_version {version}"
            )
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
        by_id = {v["version"]: v["summary"] for v in self.versions_sync(app, user)}
        return [{"version": v, "summary": by_id.get(v, "")} for v in versions]

    # -- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the ledger, and the store if this service opened it (idempotent)."""
        self.ledger.close()
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> ChronoMemMemoryService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
