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
from typing import Any

from chronobench.data.schema import Probe, RollbackQuery, Stream
from chronobench.protocols import GenerationRequest, RollbackOutcome
from chronobench.systems.base import (
    APP,
    RestoringReaderOptions,
    SystemContext,
    pack_ranked,
    pack_spread,
)
from chronobench.systems.prompts import qa_request, summary_request


def _session(stream: Stream, j: int) -> Any:
    """Write ``j`` (1-based) of ``stream`` as an ADK session of new events."""
    from google.adk.events import Event
    from google.adk.sessions import Session
    from google.genai import types

    write = stream.writes[j - 1]
    events = []
    for k, op in enumerate(write.ops):
        if op.op != "add" or not op.text:
            raise ValueError(
                f"system=adk_chronomem ingests through ADK sessions, which only add new "
                f"events; stream {stream.stream_id} write {j} op {k} is {op.op!r} "
                "(use system=chronomem for streams with updates or deletes)"
            )
        events.append(
            Event(
                id=op.item_id,
                author=str(op.meta.get("speaker") or "user"),
                content=types.Content(role="user", parts=[types.Part(text=op.text)]),
            )
        )
    return Session(
        id=str(write.labels.get("session", f"write-{j}")),
        app_name=APP,
        user_id=stream.stream_id,
        events=events,
        state={"chronomem_labels": dict(write.labels)},
    )


class AdkChronoMemSystem(RestoringReaderOptions):
    """ChronoMem driven only through ``ChronoMemMemoryService`` (the ADK memory service)."""

    name = "adk_chronomem"

    def __init__(
        self,
        ctx: SystemContext,
        *,
        rollback_mode: str = "truncate",
        top_k_items: int = 8,
        context_budget_tokens: int = 2000,
        summary_budget_tokens: int = 6000,
    ) -> None:
        super().__init__(
            ctx,
            rollback_mode=rollback_mode,
            top_k_items=top_k_items,
            context_budget_tokens=context_budget_tokens,
            summary_budget_tokens=summary_budget_tokens,
        )
        self._loop = asyncio.new_event_loop()
        self._full: Any = None  # the post-exposure service of the current stream
        self._work: Any = None  # the service over this query's restored copy
        self._user = ""
        self._j_of: dict[int, int] = {}
        self._order: dict[str, tuple[int, int]] = {}

    def _run(self, coro: Any) -> Any:
        if self._loop.is_closed():  # close() ends the loop; a later stream gets a new one
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def _service(self, store: Any) -> Any:
        from chronobench.integrations.adk import ChronoMemMemoryService

        return ChronoMemMemoryService(store=store, max_results=self.top_k)

    def ingest(self, stream: Stream) -> None:
        """Exposure: one ``add_session_to_memory`` per write."""
        self._drop_work()
        if self._full is not None:
            self._full.close()
            self._full.store.close()
        full = self._service(self.ctx.stores.new_store())
        seen: set[str] = set()
        vid_of = {0: full.store.versions(APP, stream.stream_id)[0].version_id}
        for j in range(1, len(stream.writes) + 1):
            session = _session(stream, j)
            for e in session.events:
                if e.id in seen:  # the service would skip it: say so instead
                    raise ValueError(
                        f"stream {stream.stream_id} write {j} re-adds item {e.id!r}; "
                        "system=adk_chronomem needs each item added once"
                    )
                seen.add(e.id)
            self._run(full.add_session_to_memory(session))
            vid_of[j] = full.store.head(APP, stream.stream_id)
        self._full, self._user = full, stream.stream_id
        self._j_of = {vid: j for j, vid in vid_of.items()}
        self._order = {}
        for w in stream.writes:
            for i, op in enumerate(w.ops):
                self._order.setdefault(op.item_id, (w.version, i))

    def _drop_work(self) -> None:
        if self._work is not None:
            self._work.close()
            self._work.store.close()
            self._work = None

    def rollback(self, query: RollbackQuery) -> RollbackOutcome:
        """``service.rollback(request=...)`` on a copy of the post-exposure store."""
        from chronobench.integrations.adk import UncertainRequestError

        if self._full is None:
            raise RuntimeError("ingest() must be called before rollback()")
        self._drop_work()
        self._work = self._service(self._full.store.clone())
        try:
            report = self._run(
                self._work.rollback(
                    app_name=APP, user_id=self._user, request=query.text, mode=self.mode
                )
            )
        except UncertainRequestError as exc:
            # Refused: memory stays as it is (no rollback), and the sample says why.
            return RollbackOutcome(selected_version=None, meta={"uncertain": str(exc)})
        return RollbackOutcome(
            selected_version=self._j_of.get(report.version),
            candidates=[(self._j_of[v], s) for v, s in report.candidates if v in self._j_of],
            meta={"intent": report.intent, "confidence": report.confidence},
        )

    def prepare(self, query: RollbackQuery, probe: Probe) -> GenerationRequest:
        """The prompt for one probe, from the restored state (``final_qa``: the full one)."""
        assert self._work is not None
        if probe.kind == "summary":
            snap = self._work.store.snapshot(APP, self._user)
            ordered = sorted(snap.items(), key=lambda kv: self._order.get(kv[0], (1 << 30, 0)))
            items = pack_spread([text for _, text in ordered], self.summary_budget)
            return summary_request(probe.question, items, self.ctx.params)
        service = self._full if probe.kind == "final_qa" else self._work
        res = self._run(
            service.search_memory(app_name=APP, user_id=self._user, query=probe.question)
        )
        texts = [p.text for m in res.memories for p in (m.content.parts or []) if p.text]
        return qa_request(probe.question, pack_ranked(texts, self.budget), self.ctx.params)

    def answer_directly(self, query: RollbackQuery, probe: Probe) -> str | None:
        """Always goes through the backbone."""
        return None

    def close(self) -> None:
        """Close both services, their stores and the event loop."""
        self._drop_work()
        if self._full is not None:
            self._full.close()
            self._full.store.close()
            self._full = None
        if not self._loop.is_closed():
            self._loop.close()
