"""ChronoMem as an MCP server: ``chronomem mcp`` (``pip install 'chronomem[mcp]'``).

:func:`~chronomem.mcp.server.build_server` makes the server for a store and a scope;
:mod:`chronomem.mcp.run` serves it over stdio or streamable HTTP.
"""

from __future__ import annotations

try:
    import mcp as _sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the ChronoMem MCP server needs the MCP Python SDK: pip install 'chronomem[mcp]'"
    ) from exc

from chronomem.mcp.server import Scope, ServerConfig, build_server

__all__ = ["Scope", "ServerConfig", "build_server"]
