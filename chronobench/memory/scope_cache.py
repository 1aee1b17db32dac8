"""The per-scope, per-generation cache that the store's in-memory indexes share.

A scope's lexical index and dense matrix are rebuilt (or extended) only when the scope's
``gen`` moves; clones share the cached values, which are never mutated in place.
"""

from __future__ import annotations

import threading
from typing import Generic, Self, TypeVar

V = TypeVar("V")


class ScopeCache(Generic[V]):
    """``scope id -> value`` under a lock; values are immutable once stored."""

    def __init__(self) -> None:
        self._by_scope: dict[int, V] = {}
        self._lock = threading.Lock()

    def copy(self) -> Self:
        """A cache of the same class sharing the (immutable) values, for cloned stores."""
        other = type(self)()
        with self._lock:
            other._by_scope = dict(self._by_scope)
        return other

    def cached(self, scope_id: int) -> V | None:
        """The value held for ``scope_id`` (current or stale: the caller checks ``gen``)."""
        with self._lock:
            return self._by_scope.get(scope_id)

    def store(self, scope_id: int, value: V) -> V:
        """Keep ``value`` for ``scope_id`` and return it."""
        with self._lock:
            self._by_scope[scope_id] = value
        return value

    def drop(self, scope_id: int | None = None) -> None:
        """Forget one scope's value (or all)."""
        with self._lock:
            if scope_id is None:
                self._by_scope.clear()
            else:
                self._by_scope.pop(scope_id, None)
