"""The per-scope, per-generation cache that the store's in-memory caches share.

A scope's lexical index, dense matrix, S(HEAD) items and episode boundaries are rebuilt
(or extended) only when the scope's ``gen`` moves; clones share the cached values, which
are never mutated in place (a cache whose entries fill in lazily gives a clone its own
entry, :meth:`ScopeCache.share`). :class:`~chronomem.caches.StoreCaches` holds
one of each per store.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Generic, Self, TypeVar

V = TypeVar("V")


class ScopeCache(Generic[V]):
    """``key -> value`` under a lock, the key a scope id (or a tuple starting with one);
    values are immutable once stored."""

    def __init__(self) -> None:
        self._by_scope: dict[Hashable, V] = {}
        self._lock = threading.Lock()

    def copy(self) -> Self:
        """A cache of the same class sharing the (immutable) values, for cloned stores."""
        other = type(self)()
        with self._lock:
            other._by_scope = {k: self.share(v) for k, v in self._by_scope.items()}
        return other

    def share(self, value: V) -> V:
        """What a clone holds for ``value``: the value itself (immutable)."""
        return value

    def cached(self, scope_id: Hashable) -> V | None:
        """The value held for ``scope_id`` (current or stale: the caller checks ``gen``)."""
        with self._lock:
            return self._by_scope.get(scope_id)

    def store(self, scope_id: Hashable, value: V) -> V:
        """Keep ``value`` for ``scope_id`` and return it."""
        with self._lock:
            self._by_scope[scope_id] = value
        return value

    def drop(self, scope_id: Hashable | None = None) -> None:
        """Forget one key's value (or all)."""
        with self._lock:
            if scope_id is None:
                self._by_scope.clear()
            else:
                self._by_scope.pop(scope_id, None)
