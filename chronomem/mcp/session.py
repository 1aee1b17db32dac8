"""What the MCP server keeps between tool calls: the scope a caller reaches, the
single-use tokens of previewed undos, and the writes made through the server (what "the
second one" counts)."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass

from mcp.server.mcpserver.exceptions import ToolError

__all__ = ["Plan", "Previews", "Scope", "Writes"]


@dataclass(frozen=True)
class Scope:
    """The memory a caller reaches: one (app, user) pair of the store."""

    app: str
    user: str


@dataclass(frozen=True)
class Plan:
    """A previewed undo, as ``undo`` will apply it."""

    scope: Scope
    mode: str
    versions: tuple[int, ...]
    target: int | None
    head: int
    with_dependents: str
    created: float


class Previews:
    """Single-use tokens for previewed undos, bound to their scope, expiring."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._plans: dict[str, Plan] = {}
        self._lock = threading.Lock()

    def issue(self, plan: Plan) -> str:
        token = secrets.token_urlsafe(12)
        with self._lock:
            now = time.monotonic()
            for t in [t for t, p in self._plans.items() if now - p.created > self.ttl_s]:
                del self._plans[t]
            self._plans[token] = plan
        return token

    def take(self, scope: Scope, token: str) -> Plan:
        with self._lock:
            plan = self._plans.get(token)
            if plan is None or plan.scope != scope:
                raise ToolError(
                    "unknown or expired undo token; call preview_undo first and pass the "
                    "token it returns (a token works once, for the memory it was made for)"
                )
            del self._plans[token]
            if time.monotonic() - plan.created > self.ttl_s:
                raise ToolError("this undo token has expired; call preview_undo again")
        return plan


class Writes:
    """The versions ``remember`` wrote through this server, per scope, in order: what
    "undo the second one" counts. (MCP requests carry no conversation identity a server
    could count per client, and one scope is one user's memory.)"""

    KEEP = 1000

    def __init__(self) -> None:
        self._by_scope: dict[Scope, list[int]] = {}
        self._lock = threading.Lock()

    def add(self, scope: Scope, version: int) -> None:
        with self._lock:
            got = self._by_scope.setdefault(scope, [])
            got.append(version)
            del got[: -self.KEEP]

    def of(self, scope: Scope) -> list[int]:
        with self._lock:
            return list(self._by_scope.get(scope, ()))
