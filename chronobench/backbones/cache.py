"""A persistent SQLite cache in front of any backbone.

Key: sha256 of the backbone name, model, backbone config (``cache_config`` when the
backbone has one), messages, sampling parameters, task, context and question. Only
misses reach the wrapped backbone, in one batch (or in ``chunk_size`` pieces); each
piece is written in one transaction as soon as it returns, so a killed run resumes
with everything generated before the kill. Each entry keeps the completion's token
usage as the backbone reported it (estimated, about 4 characters a token, when the
backbone reports none), and a hit returns it with the text.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from chronobench.backbones.request_hash import request_key
from chronobench.protocols import Backbone, Completion, GenerationRequest, as_completion
from chronomem.sqlite_retry import retry_busy

__all__ = [
    "CacheStats",
    "CachedBackbone",
    "estimate_tokens",
    "open_cache",
    "request_key",
    "rows_by_key",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS generations (
    key TEXT PRIMARY KEY,
    backbone TEXT NOT NULL,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


def open_cache(path: Path, schema: str, busy_timeout_ms: int) -> sqlite3.Connection:
    """A cache file's connection, its table created. Several processes (a joblib multirun)
    may share the file: WAL lets readers run beside a writer, and the busy timeout makes a
    writer wait instead of failing."""
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=busy_timeout_ms / 1000)
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"))
    conn.execute("PRAGMA synchronous=NORMAL")
    retry_busy(lambda: conn.execute(schema))
    conn.commit()
    return conn


def rows_by_key(conn: sqlite3.Connection, select: str, keys: Sequence[str]) -> list[Any]:
    """The rows ``select`` (its ``{marks}`` the placeholders of ``key IN (...)``) finds
    for ``keys``, queried in slices: SQLite caps the bound parameters of one statement."""
    unique = list(dict.fromkeys(keys))
    rows: list[Any] = []
    for start in range(0, len(unique), 500):
        part = unique[start : start + 500]
        rows += conn.execute(select.format(marks=",".join("?" * len(part))), part).fetchall()
    return rows


def estimate_tokens(text: str) -> int:
    """Rough token count (about 4 characters per token); for budgeting, not billing."""
    return math.ceil(len(text) / 4)


@dataclass
class CacheStats:
    """Counters of one :class:`CachedBackbone` (this process only)."""

    hits: int = 0
    misses: int = 0
    calls: int = 0  # generate() calls that reached the wrapped backbone
    # For requests sent to the wrapped backbone and what it returned: its reported usage,
    # else an estimate.
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Wall seconds inside the wrapped backbone (tokens per second = tokens / this).
    generate_s: float = 0.0

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict (for the run manifest)."""
        return {k: self[k] for k in asdict(self)}

    # Mapping-style access so ``dict(cache.stats)`` works too.
    def keys(self) -> list[str]:
        """Counter names."""
        return list(asdict(self))

    def __getitem__(self, key: str) -> float:
        value = getattr(self, key)
        return round(value, 3) if isinstance(value, float) else int(value)


class CachedBackbone:
    """Wraps ``inner`` with a persistent cache at ``path`` (created if missing).

    Use as a context manager or call :meth:`close`. Thread-safe.
    """

    def __init__(
        self,
        inner: Backbone,
        path: str | Path,
        chunk_size: int | None = None,
        *,
        busy_timeout_ms: int = 60_000,
        summary_max_new_tokens: int | None = None,
    ) -> None:
        """``chunk_size``: misses per call to ``inner`` (None or 0: all in one call);
        ``busy_timeout_ms``: how long a write waits for another process's write;
        ``summary_max_new_tokens``: summary requests' own token limit (None: as built).
        The limit is set here, where every request of a run passes, so no system or
        runner builds summaries differently; it is in their cache keys."""
        if chunk_size is not None and chunk_size < 0:
            raise ValueError(
                f"CachedBackbone: chunk_size must be >= 0 (0 or None: one call), got {chunk_size}"
            )
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.path = Path(path)
        self.chunk_size = chunk_size
        self.summary_max_new_tokens = summary_max_new_tokens
        self.stats = CacheStats()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = open_cache(self.path, _SCHEMA, busy_timeout_ms)

    def _lookup(self, keys: Sequence[str]) -> dict[str, Completion]:
        rows = rows_by_key(
            self._conn,
            "SELECT key, response, prompt_tokens, completion_tokens FROM generations "
            "WHERE key IN ({marks})",
            keys,
        )
        return {key: Completion(text, p, c) for key, text, p, c in rows}

    def _store(self, rows: list[tuple[str, Completion]]) -> None:
        now = time.time()

        def write() -> None:
            with self._conn:  # one transaction per returned piece
                self._conn.executemany(
                    "INSERT OR REPLACE INTO generations VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            key,
                            self.name,
                            self.model,
                            c.text,
                            c.prompt_tokens,
                            c.completion_tokens,
                            now,
                        )
                        for key, c in rows
                    ],
                )

        retry_busy(write)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Answer from the cache where possible; send the misses to the wrapped backbone.
        A backbone whose answers must not be stored (``cacheable = False``: one that
        records its prompts, or answers from a file) is always asked."""
        if self.summary_max_new_tokens is not None:
            requests = [self._limit(r) for r in requests]
        if not getattr(self.inner, "cacheable", True):
            return self._uncached(requests)
        keys = [request_key(self.inner, r) for r in requests]
        with self._lock:
            found = self._lookup(keys)
            # Identical requests inside one batch are generated once.
            todo: dict[str, GenerationRequest] = {}
            for key, req in zip(keys, requests, strict=True):
                if key in found or key in todo:
                    self.stats.hits += 1
                else:
                    todo[key] = req
                    self.stats.misses += 1
            pending = list(todo.items())
            size = self.chunk_size or max(1, len(pending))
            for start in range(0, len(pending), size):
                piece = pending[start : start + size]
                started = time.perf_counter()
                outputs = self.inner.generate([req for _, req in piece])
                self.stats.generate_s += time.perf_counter() - started
                if len(outputs) != len(piece):
                    raise RuntimeError(
                        f"backbone {self.name!r} returned {len(outputs)} outputs "
                        f"for {len(piece)} requests"
                    )
                done = [
                    (key, _with_usage(as_completion(out), req))
                    for (key, req), out in zip(piece, outputs, strict=True)
                ]
                self.stats.calls += 1
                self.stats.prompt_tokens += sum(int(c.prompt_tokens or 0) for _, c in done)
                self.stats.completion_tokens += sum(int(c.completion_tokens or 0) for _, c in done)
                self._store(done)
                found.update(done)
        return [found[k] for k in keys]

    def _limit(self, request: GenerationRequest) -> GenerationRequest:
        if request.task != "summary" or self.summary_max_new_tokens is None:
            return request
        params = replace(request.params, max_new_tokens=self.summary_max_new_tokens)
        return replace(request, params=params)

    def _uncached(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        with self._lock:
            started = time.perf_counter()
            outputs = [as_completion(o) for o in self.inner.generate(list(requests))]
            self.stats.generate_s += time.perf_counter() - started
            if len(outputs) != len(requests):
                raise RuntimeError(
                    f"backbone {self.name!r} returned {len(outputs)} outputs "
                    f"for {len(requests)} requests"
                )
            self.stats.calls += 1
            self.stats.misses += len(requests)
            return outputs

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM generations").fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> CachedBackbone:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _prompt_tokens(request: GenerationRequest) -> int:
    return sum(estimate_tokens(m.content) for m in request.messages)


def _with_usage(completion: Completion, request: GenerationRequest) -> Completion:
    """The completion with its token usage: as reported, else estimated."""
    prompt = completion.prompt_tokens
    produced = completion.completion_tokens
    return Completion(
        completion.text,
        _prompt_tokens(request) if prompt is None else prompt,
        estimate_tokens(completion.text) if produced is None else produced,
    )
