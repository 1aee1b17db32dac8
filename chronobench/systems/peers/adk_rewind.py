"""Google ADK sessions with ``Runner.rewind_async``.

Native: each write is one invocation (invocation id = the write's) of events appended
to a session by ADK's ``SqliteSessionService``; each event carries one memory item as
its content and as a ``state_delta`` entry. Rollback is ``Runner.rewind_async(...,
rewind_before_invocation_id=<write v + 1>)``: ADK appends a rewind event whose state
delta resets the session state to what it was before that invocation.

Rewind is session-scoped: keys with the ``user:`` or ``app:`` prefix are not restored.
With ``state_scope="user"`` (memories as user state, ADK's cross-session memory) the
protocol shows exactly that. Rewound keys are set to ``None``, not removed, and the
rewound events stay in ``session.events`` (the agent's context skips them).

Adapter: the search (dense top-k over the memory items in the session state; ADK's
session service has no retrieval) and an agent that never runs (``rewind_async`` needs
a Runner, and a Runner needs an agent; no model is called).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from chronobench.systems.peers.base import (
    DenseIndex,
    Memory,
    PeerWrite,
    RollbackInfo,
    folder_bytes,
)

APP = "chronobench"
USER = "chronobench"
SESSION = "memory"


def _invocation(version: int) -> str:
    return f"write-{version}"


class AdkRewindPeer:
    """Memories in an ADK session's state; rollback by ``Runner.rewind_async``."""

    name = "adk_rewind"
    native_rollback = True
    native_search = False

    def __init__(self, workdir: str | Path, embedding: Any, *, state_scope: str = "session"):
        from google.adk.agents import BaseAgent
        from google.adk.runners import Runner
        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        if state_scope not in ("session", "user"):
            raise ValueError(f"adk_rewind: state_scope={state_scope!r}; use 'session' or 'user'")

        class _Idle(BaseAgent):
            async def _run_async_impl(self, ctx: Any) -> Any:  # never run by the benchmark
                if False:
                    yield None

        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.prefix = "mem:" if state_scope == "session" else "user:mem:"
        if state_scope == "user":
            self.name = "adk_rewind_user_state"
        self._loop = asyncio.new_event_loop()
        self.service = SqliteSessionService(str(self.workdir / "sessions.db"))
        self.runner = Runner(app_name=APP, agent=_Idle(name="memory"), session_service=self.service)
        self.index = DenseIndex(embedding)
        self._live: Any = None
        if self._session() is None:
            self._run(self.service.create_session(app_name=APP, user_id=USER, session_id=SESSION))
        self._last_version = max((m.version or 0 for m in self.state()), default=0)

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def _session(self) -> Any:
        return self._run(self.service.get_session(app_name=APP, user_id=USER, session_id=SESSION))

    def add(self, write: PeerWrite) -> None:
        from google.adk.events import Event, EventActions
        from google.genai import types

        # The live session object, as a Runner holds it between turns (re-reading the
        # session per write would make exposure quadratic in the events).
        if self._live is None:
            self._live = self._session()
        session = self._live
        for item_id, text in write.items:
            value = json.dumps({"text": text, "version": write.version})
            event = Event(
                invocation_id=_invocation(write.version),
                author="user",
                content=types.Content(role="user", parts=[types.Part(text=text)]),
                actions=EventActions(state_delta={self.prefix + item_id: value}),
            )
            self._run(self.service.append_event(session, event))
        self._last_version = max(self._last_version, write.version)

    def state(self) -> list[Memory]:
        out = []
        for key, value in self._session().state.items():
            if key.startswith(self.prefix) and value is not None:
                row = json.loads(value)
                out.append(Memory(key[len(self.prefix) :], row["text"], row["version"]))
        return sorted(out, key=lambda m: (m.version or 0, m.item_id or ""))

    def search(self, query: str, k: int) -> list[Memory]:
        return self.index.top_k(query, self.state(), k)

    def rollback_to(self, version: int) -> RollbackInfo:
        if version >= self._last_version:
            return RollbackInfo(True, "nothing after the target")
        self._run(
            self.runner.rewind_async(
                user_id=USER,
                session_id=SESSION,
                rewind_before_invocation_id=_invocation(version + 1),
            )
        )
        self._last_version = version
        self._live = None
        return RollbackInfo(
            True,
            "Runner.rewind_async before the next write's invocation (session state only)",
            {"events_kept": len(self._session().events)},
        )

    def storage_bytes(self) -> int:
        return folder_bytes(self.workdir)

    def close(self) -> None:
        close = getattr(self.service, "close", None)
        if close is not None:
            self._run(close())
        self._loop.close()
