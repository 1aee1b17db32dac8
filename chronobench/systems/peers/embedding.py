"""The one local embedding every peer is given (no hub, no API): the packaged MiniLM
through chronobench's text -> vector cache, or the hash embedder for scale runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


class PeerEmbedding:
    """``encode(texts) -> (n, dims)`` unit rows, cached by text; ``embed_fn`` is the
    ``list[str] -> list[list[float]]`` shape LangGraph stores and LangChain expect."""

    def __init__(self, spec: Any = "minilm", *, cache_dir: str | Path | None = None) -> None:
        from chronomem.embedders import resolve_embedder, shared_cache

        self.spec = spec if isinstance(spec, str) else type(spec).__name__
        self._cache = shared_cache(resolve_embedder(spec))
        if cache_dir is not None:
            from chronobench.systems.stores import EMBEDDING_CACHE_FILE

            self._cache.attach(Path(cache_dir) / EMBEDDING_CACHE_FILE)
        self.embedder = self._cache.embedder  # the raw model (ChronoMem takes it)
        self._dims: int | None = None

    def encode(self, texts: list[str]) -> np.ndarray:
        return self._cache.encode(list(texts))

    @property
    def dims(self) -> int:
        if self._dims is None:
            self._dims = int(self.encode(["dimension probe"]).shape[1])
        return self._dims

    def embed_fn(self, texts: list[str]) -> list[list[float]]:
        return [row.tolist() for row in self.encode(list(texts))]
