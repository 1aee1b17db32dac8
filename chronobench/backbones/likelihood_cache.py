"""A persistent SQLite cache in front of a model's ``loglik`` (chronomem.reader).

Key: sha256 of the model's name, its settings that change scores (``cache_config``),
the context and the continuation. Only misses reach the model, in one batch, written in
one transaction as soon as they return, so a killed run resumes with what it scored.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chronobench.backbones.cache import open_cache, rows_by_key
from chronobench.hashing import canonical_json, sha256_text

__all__ = ["CachedLikelihood", "LazyLikelihood"]

_SCHEMA = "CREATE TABLE IF NOT EXISTS loglik (key TEXT PRIMARY KEY, value REAL NOT NULL)"


class CachedLikelihood:
    """``inner.loglik`` with a cache at ``path`` (created if missing). Thread-safe."""

    def __init__(self, inner: Any, path: str | Path, *, busy_timeout_ms: int = 60_000) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", type(inner).__name__)
        self.model = getattr(inner, "model", "")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._conn = open_cache(self.path, _SCHEMA, busy_timeout_ms)

    def key(self, context: str, continuation: str) -> str:
        """The cache key of one pair."""
        config = getattr(self.inner, "cache_config", {})
        return sha256_text(canonical_json([self.name, self.model, config, context, continuation]))

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """As ``inner.loglik``; cached pairs are read, the rest scored in one batch."""
        keys = [self.key(c, q) for c, q in pairs]
        with self._lock:
            found: dict[str, float] = dict(
                rows_by_key(
                    self._conn, "SELECT key, value FROM loglik WHERE key IN ({marks})", keys
                )
            )
            missing = [i for i, k in enumerate(keys) if k not in found]
            self.hits += len(keys) - len(missing)
            self.misses += len(missing)
            if missing:
                scores = self.inner.loglik([pairs[i] for i in missing])
                rows = [(keys[i], float(s)) for i, s in zip(missing, scores, strict=True)]
                with self._conn:
                    self._conn.executemany("INSERT OR REPLACE INTO loglik VALUES (?, ?)", rows)
                found.update(rows)
        return [float(found[k]) for k in keys]

    def close(self) -> None:
        """Close the cache file."""
        self._conn.close()


class LazyLikelihood:
    """A model built on its first ``loglik`` (by ``factory``), so a run that composes or
    builds its parts reads no weights; ``name``, ``model`` and ``cache_config`` are known
    before (the cache key)."""

    def __init__(
        self, factory: Any, name: str, model: str, cache_config: dict[str, Any] | None = None
    ) -> None:
        self.factory = factory
        self.name, self.model = name, model
        self.cache_config = dict(cache_config or {})
        self._inner: Any = None
        self._lock = threading.Lock()

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """As the built model's ``loglik``."""
        with self._lock:
            if self._inner is None:
                self._inner = self.factory()
        return list(self._inner.loglik(pairs))
