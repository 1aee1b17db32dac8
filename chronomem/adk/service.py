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

from chronomem import ChronoMem
from chronomem.adk import convert as cv
from chronomem.adk.history import HistoryMixin, check_scope
from chronomem.adk.ledger import Ledger
from chronomem.adk.matching import MatchIndex, parse_query
from chronomem.adk.previews import PreviewBook


class ChronoMemMemoryService(HistoryMixin, BaseMemoryService):
    """A versioned ADK memory service: every write is a commit that can be rolled back.

    Args:
        db_path: SQLite file for the store, or ``":memory:"``.
        max_results: most memories one ``search_memory`` returns.
        store: an existing :class:`~chronomem.ChronoMem` to wrap instead
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
        # The ledger lives beside the store: same SQLite file, or same PostgreSQL schema.
        self.ledger = Ledger(self.store.path, schema=getattr(self.store.backend, "schema", None))
        self._write_lock = threading.RLock()
        self._match = MatchIndex()
        self.previews = PreviewBook()

    # -- writes -----------------------------------------------------------------------------

    async def add_session_to_memory(self, session: Any) -> None:
        """Commit the session's text-bearing events not ingested before (one version)."""
        state = getattr(session, "state", None) or {}
        extra = state.get(cv.SESSION_LABELS_KEY) if isinstance(state, Mapping) else None
        if extra is not None and not isinstance(extra, Mapping):
            raise ValueError(
                f"session.state[{cv.SESSION_LABELS_KEY!r}] must be a mapping of commit labels"
            )
        meta = {"labels": dict(extra)} if extra else {}
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
        check_scope(app, user)
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
        check_scope(app, user)
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
        check_scope(app, user)
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
        check_scope(app_name, user_id)
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
