"""Post-exposure ChronoMem stores, built once per stream and cloned per rollback query.

Exposure (ingesting every write) is the expensive step; a rollback query must start
from the full post-exposure state, so each query works on a clone and leaves the
cached original untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronobench.data.schema import Stream
from chronobench.systems.base import APP

# Beside the backbone call cache (llm_cache.sqlite) in paths.cache_dir.
EMBEDDING_CACHE_FILE = "embeddings.sqlite"


@dataclass
class IngestedStream:
    """A store holding one stream's full history, and the version-id maps."""

    store: Any  # chronobench.memory.ChronoMem
    stream: Stream
    vid_of: dict[int, Any]  # stream version j (0 = empty root) -> store version id
    j_of: dict[Any, int]  # store version id -> stream version j

    @property
    def user(self) -> str:
        return self.stream.stream_id


class StoreProvider:
    """Builds ChronoMem stores with the run's embedder, retriever and reranker settings."""

    def __init__(
        self,
        *,
        embedder: Any = "minilm",
        max_cached: int = 4,
        cache_dir: str | Path | None = None,
        location: str | None = None,
        **store_options: Any,
    ):
        # store_options go to ChronoMem unchanged (reranker, rrf_k0, depth, rerank_depth...).
        # cache_dir: where the persistent embedding cache lives (None: memory only).
        # location: None for in-memory SQLite stores, or a PostgreSQL URL: each store
        # then lives in a temporary schema of that database, dropped when it closes.
        self.location = location
        self.embedder_spec = embedder
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.store_options = store_options
        self.max_cached = max_cached
        self._embedder: Any = None
        self._cache: dict[str, IngestedStream] = {}

    @property
    def embedder(self) -> Any:
        """One embedder per provider, so its text->vector cache is shared by all stores
        (and, with ``cache_dir``, by every cell and process using that folder)."""
        if self._embedder is None:
            from chronobench.memory import resolve_embedder
            from chronobench.memory.embedders import shared_cache

            self._embedder = resolve_embedder(self.embedder_spec)
            if self.cache_dir is not None:
                shared_cache(self._embedder).attach(self.cache_dir / EMBEDDING_CACHE_FILE)
        return self._embedder

    def new_store(self, path: str | None = None) -> Any:
        """An empty store with this provider's settings (``path``: SQLite file or URL;
        default: in memory, or a temporary schema on the provider's PostgreSQL server)."""
        from chronobench.memory import ChronoMem

        if path is None and self.location:
            from chronobench.memory.pg.locations import temporary_store

            return temporary_store(self.location, embedder=self.embedder, **self.store_options)
        return ChronoMem(path or ":memory:", embedder=self.embedder, **self.store_options)

    def get(self, stream: Stream) -> IngestedStream:
        """The post-exposure store of ``stream`` (built on first use, then cached)."""
        hit = self._cache.get(stream.stream_id)
        if hit is not None and hit.stream is stream:
            return hit
        ingested = self._ingest(stream)
        if len(self._cache) >= self.max_cached:
            oldest = next(iter(self._cache))
            self._cache.pop(oldest).store.close()
        self._cache[stream.stream_id] = ingested
        return ingested

    def _ingest(self, stream: Stream) -> IngestedStream:
        store = self.new_store()
        user = stream.stream_id
        commits = [
            {
                "ops": list(w.ops),
                "source": w.source,
                "reason": w.reason,
                "labels": dict(w.labels),
                "summary": w.summary,
                "valid_time": w.valid_time,
            }
            for w in stream.writes
        ]
        vids = store.commit_many(APP, user, commits)
        root = store.versions(APP, user)[0].version_id
        vid_of = {0: root, **{j: vid for j, vid in enumerate(vids, start=1)}}
        j_of = {vid: j for j, vid in vid_of.items()}
        return IngestedStream(store=store, stream=stream, vid_of=vid_of, j_of=j_of)

    def close(self) -> None:
        """Close every cached store."""
        for ing in self._cache.values():
            ing.store.close()
        self._cache.clear()
