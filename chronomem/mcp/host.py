"""What the MCP server's tools share: the store, the caller's scope, one store call at a
time, the pending undo plans and the writes made through the server.

The tools themselves live by what they do (:mod:`~chronomem.mcp.tools_memory`,
:mod:`~chronomem.mcp.tools_undo`, :mod:`~chronomem.mcp.tools_branches`); each module's
``register`` adds its tools to a :class:`ToolHost`, which :func:`~chronomem.mcp.server.build_server`
makes once per server.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from chronomem.mcp.schema import Changed, Diff
from chronomem.mcp.session import Previews, Scope, Writes
from chronomem.query import fts_terms
from chronomem.types import ChronoMemError, VersionRecord

__all__ = ["CALLER", "ToolHost", "copy_model", "diff_of", "item_id_for", "iso_time"]

#: The scope of the HTTP request being served, set by the token gate
#: (:mod:`chronomem.mcp.run`); unset (stdio, in-process) every call gets the config's scope.
CALLER: ContextVar[Scope | None] = ContextVar("chronomem_mcp_caller", default=None)


@dataclass
class ToolHost:
    """One server's shared state. ``server`` is the MCP server the tools are added to; it
    keeps each tool's declared arguments in ``declared`` so that it can refuse others."""

    server: Any
    store: Any  # a ChronoMem
    default_scope: Scope
    previews: Previews
    written: Writes = field(default_factory=Writes)
    # one store call at a time; the event loop stays free
    lock: threading.Lock = field(default_factory=threading.Lock)

    def scope(self, ctx: Any = None) -> Scope:
        """The memory a call works on: the HTTP caller's, else the server's."""
        return CALLER.get() or self.default_scope

    async def run(self, fn: Callable[[], Any]) -> Any:
        """``fn`` in a worker thread under the lock; store errors become tool errors."""

        def locked() -> Any:
            with self.lock:
                return fn()

        try:
            return await anyio.to_thread.run_sync(locked)
        except ToolError:
            raise
        except (ChronoMemError, ValueError, TypeError, LookupError) as exc:
            raise ToolError(str(exc)) from exc

    def tool(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Add ``fn`` as a tool, remembering the arguments it declares."""
        params = inspect.signature(fn).parameters
        self.server.declared[fn.__name__] = {n for n in params if n != "ctx"}
        self.server.add_tool(fn, structured_output=True)
        return fn

    def versions_of(self, scope: Scope) -> list[VersionRecord]:
        return self.store.versions(scope.app, scope.user)


def copy_model(model: BaseModel, **changes: Any) -> Any:
    """A copy of a pydantic ``model`` with ``changes``."""
    return model.model_copy(update=changes)


def iso_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def diff_of(before: Mapping[str, str], after: Mapping[str, str], a: int, b: int | None) -> Diff:
    """The difference between two memories (``b`` None: the one after is not a version yet)."""
    return Diff(
        from_version=a,
        to_version=b,
        added={k: v for k, v in after.items() if k not in before},
        removed={k: v for k, v in before.items() if k not in after},
        changed={
            k: Changed(before=before[k], after=after[k])
            for k in before
            if k in after and before[k] != after[k]
        },
    )


def item_id_for(text: str, taken: set[str]) -> str:
    """A readable id for a memory added without one: its first words, made unique."""
    words = [w for w in fts_terms(text) if len(w) > 1]
    base = "_".join(words[:4])[:40] or "memory"
    out, n = base, 2
    while out in taken:
        out, n = f"{base}_{n}", n + 1
    return out
