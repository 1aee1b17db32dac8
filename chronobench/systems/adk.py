"""ChronoMem through its Google ADK memory service, as a system under test.

Same protocol as ``chronomem`` but every step goes through the ADK interface:
exposure calls ``add_session_to_memory`` once per write (a write is one ADK session
whose events are the write's memory items; the write's labels travel in the
session state key ``chronomem_labels``), the rollback request goes to the service's
``rollback`` (the version it chooses is the one scored), and QA reads what
``search_memory`` returns at HEAD. Summaries need the whole restored state, which a
keyword search cannot list, so they read the restored snapshot as ``chronomem`` does.

The store behind the service is built with the run's settings (embedder, retriever,
reranker), so differences from ``chronomem`` come from the ADK path itself: keyword
matching instead of hybrid retrieval when reading, and the session mapping on ingest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from chronobench.protocols import GenerationRequest, Question, Reply, RollbackOutcome, StreamWrite
from chronobench.systems.base import (
    APP,
    RestoringReaderOptions,
    SystemContext,
    item_order,
    pack_ranked,
    pack_spread,
)
from chronobench.systems.prompts import is_summary_request, qa_request, summary_request
from chronobench.systems.registry import ChronoMemOptions


def _session(write: StreamWrite, user: str) -> Any:
    """One write as an ADK session of new events, stamped with when the write happened.

    ADK stamps an event with the clock when none is given; the stream's own time is what a
    deployed agent would have recorded, and it is what dated requests ("the May chat") are
    read against, so a run on another day stores the same memory."""
    from google.adk.events import Event
    from google.adk.sessions import Session
    from google.genai import types

    from chronomem.dates import parse_moment

    moment = parse_moment(write.timestamp)
    when = {} if moment is None else {"timestamp": moment.timestamp()}
    events = []
    for k, op in enumerate(write.changes):
        if op.op != "add" or not op.text:
            raise ValueError(
                f"system=adk_chronomem ingests through ADK sessions, which only add new "
                f"events; write {write.write_id} op {k} is {op.op!r} "
                "(use system=chronomem for streams with updates or deletes)"
            )
        events.append(
            Event(
                id=op.item_id,
                author=op.author or "user",
                content=types.Content(role="user", parts=[types.Part(text=op.text)]),
                **when,
            )
        )
    labels = {k: (list(v) if isinstance(v, tuple) else v) for k, v in write.labels.items()}
    return Session(
        id=str(labels.get("session", f"write-{write.write_id}")),
        app_name=APP,
        user_id=user,
        events=events,
        state={"chronomem_labels": labels},
    )


class AdkSession:
    """One session through the service: ``rollback`` goes to ``service.rollback`` on a
    copy of the post-exposure store; QA reads ``search_memory`` (summaries the restored
    snapshot)."""

    def __init__(self, system: AdkChronoMemSystem) -> None:
        self.system = system
        self._work: Any = None  # the service over this session's restored copy

    def rollback(self, request: str) -> RollbackOutcome:
        """``service.rollback(request=...)`` on a copy of the post-exposure store."""
        from chronomem.adk import UncertainRequestError

        sys_ = self.system
        if self._work is not None:
            raise RuntimeError("a session rolls back once; open a new session for the next")
        self._work = sys_.service(sys_.full.store.clone())
        try:
            report = sys_.run(
                self._work.rollback(
                    app_name=APP, user_id=sys_.user, request=request, mode=sys_.mode
                )
            )
        except UncertainRequestError as exc:
            # Refused: memory stays as it is (no rollback), and the sample says why.
            return RollbackOutcome(selected_version=None, meta={"uncertain": str(exc)})
        return RollbackOutcome(
            selected_version=sys_.j_of.get(report.version),
            candidates=[(sys_.j_of[v], s) for v, s in report.candidates if v in sys_.j_of],
            meta={"intent": report.intent, "confidence": report.confidence},
        )

    def ask(self, questions: Sequence[Question]) -> list[Reply]:
        """One prompt per question, from this session's state."""
        return [Reply(q.question_id, request=self._prompt(q.text)) for q in questions]

    def _prompt(self, text: str) -> GenerationRequest:
        sys_ = self.system
        service = self._work if self._work is not None else sys_.full
        if is_summary_request(text):
            snap = service.store.snapshot(APP, sys_.user)
            ordered = sorted(snap.items(), key=lambda kv: sys_.order.get(kv[0], (1 << 30, 0)))
            items = pack_spread([t for _, t in ordered], sys_.summary_budget)
            return summary_request(text, items, sys_.ctx.params)
        res = sys_.run(service.search_memory(app_name=APP, user_id=sys_.user, query=text))
        texts = [p.text for m in res.memories for p in (m.content.parts or []) if p.text]
        return qa_request(text, pack_ranked(texts, sys_.budget), sys_.ctx.params)

    def close(self) -> None:
        """Close this session's service and its store copy."""
        if self._work is not None:
            self._work.close()
            self._work.store.close()
            self._work = None


class AdkChronoMemSystem(RestoringReaderOptions):
    """ChronoMem driven only through ``ChronoMemMemoryService`` (the ADK memory service)."""

    name = "adk_chronomem"

    def __init__(self, ctx: SystemContext, options: ChronoMemOptions) -> None:
        super().__init__(ctx, options)
        self._loop = asyncio.new_event_loop()
        self._full: Any = None  # the post-exposure service of the current stream
        self.user = "user"
        self.j_of: dict[int, int] = {}
        self.order: dict[str, tuple[int, int]] = {}

    @property
    def full(self) -> Any:
        """The post-exposure service of the current stream."""
        if self._full is None:
            raise RuntimeError("ingest() must be called before a session is opened")
        return self._full

    def run(self, coro: Any) -> Any:
        """Run one service coroutine to completion."""
        if self._loop.is_closed():  # close() ends the loop; a later stream gets a new one
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def service(self, store: Any) -> Any:
        """The ADK memory service over ``store``."""
        from chronomem.adk import ChronoMemMemoryService

        return ChronoMemMemoryService(store=store, max_results=self.top_k)

    def ingest(self, writes: Sequence[StreamWrite]) -> None:
        """Exposure: one ``add_session_to_memory`` per write."""
        from chronobench.systems.stores import writes_digest

        self._close_full()
        full = self.service(self.ctx.stores.new_store())
        user = f"stream-{writes_digest(writes)[:12]}"
        seen: set[str] = set()
        vid_of = {0: full.store.versions(APP, user)[0].version_id}
        for w in writes:
            session = _session(w, user)
            for e in session.events:
                if e.id in seen:  # the service would skip it: say so instead
                    raise ValueError(
                        f"write {w.write_id} re-adds item {e.id!r}; "
                        "system=adk_chronomem needs each item added once"
                    )
                seen.add(e.id)
            self.run(full.add_session_to_memory(session))
            vid_of[w.write_id] = full.store.head(APP, user)
        self._full, self.user = full, user
        self.j_of = {vid: j for j, vid in vid_of.items()}
        self.order = item_order(writes)

    def open_session(self) -> AdkSession:
        """A session at the post-exposure state."""
        return AdkSession(self)

    def _close_full(self) -> None:
        if self._full is not None:
            self._full.close()
            self._full.store.close()
            self._full = None

    def close(self) -> None:
        """Close the service, its store and the event loop."""
        self._close_full()
        if not self._loop.is_closed():
            self._loop.close()
