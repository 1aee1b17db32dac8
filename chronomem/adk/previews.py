"""Pending rollback previews: the token an agent must echo to confirm an undo.

A preview binds the chosen target version to HEAD at preview time. Confirming
applies exactly that target, and only while HEAD has not moved; a token is
single-use, scoped to its (app, user), and expires after ``ttl_s`` seconds.
Tokens live in this process only (a restarted agent previews again).

The book also remembers the invocations (agent turns) that used the memory-undo
tools: the service does not memorise their events, because such a turn quotes
what is being undone ("I will forget: the door code is 4512") and saving it would
bring the undone fact straight back; it would also move HEAD between the preview
and the confirmation.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True)
class Pending:
    """A previewed rollback waiting for confirmation."""

    app: str
    user: str
    version: int
    head: int
    mode: str
    request: str
    created: float
    versions: tuple[int, ...] = ()  # a selective forget's commits (mode "selective")
    with_dependents: str = ""
    redact: bool = False  # a selective forget that also erases the texts from history


class PreviewBook:
    """Issues and redeems preview tokens (thread-safe)."""

    def __init__(self, ttl_s: float = 900.0, max_pending: int = 1024) -> None:
        self.ttl_s = ttl_s
        self.max_pending = max_pending
        self._pending: dict[str, Pending] = {}
        self._quiet: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def quiet(self, invocation_id: str | None) -> None:
        """Mark an invocation whose events must not be memorised (bounded, oldest dropped)."""
        if not invocation_id:
            return
        with self._lock:
            self._quiet[invocation_id] = None
            while len(self._quiet) > self.max_pending:
                self._quiet.popitem(last=False)

    def is_quiet(self, invocation_id: str | None) -> bool:
        """Whether events of ``invocation_id`` are kept out of memory."""
        return bool(invocation_id) and invocation_id in self._quiet

    def issue(self, pending: Pending) -> str:
        """Store ``pending`` and return its token."""
        token = secrets.token_urlsafe(9)
        with self._lock:
            self._expire()
            if len(self._pending) >= self.max_pending:  # drop the oldest
                self._pending.pop(next(iter(self._pending)))
            self._pending[token] = pending
        return token

    def take(self, app: str, user: str, token: str) -> Pending:
        """Redeem ``token`` for (app, user); raises ValueError saying why it cannot be."""
        with self._lock:
            self._expire()
            got = self._pending.get(token) if isinstance(token, str) else None
            if got is None or (got.app, got.user) != (app, user):
                raise ValueError(
                    "unknown or expired confirmation token; call preview_memory_undo first "
                    "and pass the token it returns"
                )
            del self._pending[token]
        return got

    def _expire(self) -> None:
        now = time.monotonic()
        for tok in [t for t, p in self._pending.items() if now - p.created > self.ttl_s]:
            del self._pending[tok]
