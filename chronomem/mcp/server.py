"""The MCP server: ChronoMem's tools and resources on the official Python SDK (``mcp``).

Every tool works on one memory scope (app, user) that the server decides: the one it was
started with, or, over HTTP with per-client tokens, the one the caller's token is bound
to. No tool takes a scope argument, and a call naming one (``"user": "bob"``) is refused
rather than ignored, so a model cannot reach another user's memory by asking.

Undo is two steps: ``preview_undo`` resolves a request (plain words, "the second one",
or a version id) to a plan, with its confidence and the store's refusal reasons, and
returns a token; ``undo`` applies exactly that plan, once, and only while the memory has
not moved since the preview. An agent cannot act on a plan it did not see.

Store errors come back as MCP tool errors carrying the store's message (what was wrong
and how to fix it), never a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

import chronomem
from chronomem.mcp import tools_branches, tools_memory, tools_undo
from chronomem.mcp.host import CALLER, ToolHost
from chronomem.mcp.session import Previews, Scope

__all__ = ["CALLER", "Scope", "ServerConfig", "build_server"]

# ---- configuration ---------------------------------------------------------------------


@dataclass
class ServerConfig:
    """What the server serves. ``scope`` is the memory of every caller, except over HTTP
    with ``tokens``: there each bearer token names its caller's own scope."""

    store: Any  # a ChronoMem
    scope: Scope
    tokens: Mapping[str, Scope] = field(default_factory=dict)
    preview_ttl_s: float = 900.0


# ---- the server ------------------------------------------------------------------------


class _ChronoMemServer(MCPServer):
    """MCPServer that refuses arguments a tool does not declare (a scope above all)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.declared: dict[str, set[str]] = {}

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        known = self.declared.get(name)
        extra = sorted(set(arguments or {}) - known) if known is not None else []
        if extra:
            scope_words = {"app", "user", "scope", "user_id", "app_name"} & set(extra)
            why = (
                "; the memory scope (app, user) is set by the server, not by a tool argument"
                if scope_words
                else ""
            )
            raise ToolError(
                f"{name}: unknown argument(s) {', '.join(map(repr, extra))}; it takes "
                f"{', '.join(sorted(known or ())) or 'no arguments'}{why}"
            )
        return await super().call_tool(name, arguments, context)


def build_server(config: ServerConfig) -> Any:
    """The MCP server for ``config``: every call works on :data:`CALLER`'s scope when an
    HTTP token gate set one, else on ``config.scope``."""
    server = _ChronoMemServer(
        "chronomem",
        version=chronomem.__version__,
        instructions=(
            "Long-term memory for one user, versioned: every write is a version. Use "
            "remember to store facts, recall to look them up, history/diff to see what "
            "changed. To take something back, call preview_undo (plain words such as "
            "'undo the move to Bergen' or 'the second one', or a version id), show the "
            "user the plan, then call undo with its token. forget removes what a request "
            "names and keeps later writes; redact erases a secret from all of history. To "
            "try something on the side, branch, checkout the branch, write, then "
            "compare_branches and merge it back (or checkout main and leave it)."
        ),
    )
    host = ToolHost(server, config.store, config.scope, Previews(config.preview_ttl_s))
    tools_memory.register(host)
    tools_undo.register(host)
    tools_branches.register(host)
    tools_memory.register_resources(host)
    return server
