"""Serving the MCP server: stdio (default) or streamable HTTP behind a bearer-token gate.

Over HTTP the server binds to loopback unless told otherwise, and anywhere else it
refuses to start without tokens: a token names its holder's memory scope, so one server
can hold several users' memories and each caller reaches only their own.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chronomem.mcp.server import CALLER, Scope, ServerConfig, build_server

__all__ = ["TokenGate", "is_loopback", "read_tokens", "serve_http", "serve_stdio"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_tokens(path: str | Path) -> dict[str, Scope]:
    """``{token: Scope}`` from a JSON file ``{"<token>": {"app": ..., "user": ...}}``."""
    where = Path(path)
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{where}: cannot read the tokens file ({exc.strerror})") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not JSON ({exc.msg}, line {exc.lineno})") from exc
    if not isinstance(data, dict) or not data:
        raise ValueError(f'{where}: expected {{"<token>": {{"app": "...", "user": "..."}}, ...}}')
    out: dict[str, Scope] = {}
    for token, entry in data.items():
        if len(token) < 16:
            raise ValueError(f"{where}: token {token[:4]!r}... is shorter than 16 characters")
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), str) and entry.get(k) for k in ("app", "user")
        ):
            raise ValueError(f"{where}: token {token[:4]!r}...: give its scope as app and user")
        out[token] = Scope(entry["app"], entry["user"])
    return out


class TokenGate:
    """ASGI middleware: an HTTP request needs ``Authorization: Bearer <token>`` with a
    known token (401 otherwise), and is served on that token's scope (:data:`CALLER`).
    With no tokens every request passes and gets the server's own scope."""

    def __init__(self, app: Any, tokens: Mapping[str, Scope]) -> None:
        self.app = app
        self.tokens = dict(tokens)

    def caller(self, header: str) -> Scope | None:
        given = header[7:].strip() if header[:7].lower() == "bearer " else ""
        found = None
        for token, scope in self.tokens.items():  # every token compared: no timing hint
            if hmac.compare_digest(given.encode(), token.encode()):
                found = scope
        return found

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not self.tokens:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        who = self.caller(headers.get(b"authorization", b"").decode("latin-1"))
        if who is None:
            body = json.dumps(
                {"error": "missing or wrong bearer token (Authorization: Bearer <token>)"}
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="chronomem"'),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        mark = CALLER.set(who)
        try:
            await self.app(scope, receive, send)
        finally:
            CALLER.reset(mark)


def serve_stdio(config: ServerConfig) -> None:
    """Serve on stdin/stdout until the client closes them."""
    build_server(config).run("stdio")


def serve_http(config: ServerConfig, host: str, port: int) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted."""
    import uvicorn

    if not is_loopback(host) and not config.tokens:
        raise ValueError(
            f"--http {host}:{port} is reachable from other machines: give tokens "
            "(CHRONOMEM_MCP_TOKEN or --tokens FILE), or bind to 127.0.0.1"
        )
    app = build_server(config).streamable_http_app(host=host)
    uvicorn.run(TokenGate(app, config.tokens), host=host, port=port, log_level="warning")
