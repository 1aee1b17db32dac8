"""Post-exposure ChronoMem stores, built once per stream and cloned per rollback query.

Exposure (ingesting every write) is the expensive step; a rollback query must start
from the full post-exposure state, so each query works on a clone and leaves the
cached original untouched. Stores are built from the public writes
(:class:`chronobench.protocols.StreamWrite`) and cached by their content, so systems and
selectors that see the same writes share one store.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronobench import paths
from chronobench.errors import MissingDependencyError
from chronobench.hashing import canonical_json, sha256_text
from chronobench.protocols import StreamWrite
from chronobench.systems.base import APP

# Numbers the providers built without settings (never reused, unlike id()).
_PROVIDERS = itertools.count()

# Beside the backbone call cache (llm_cache.sqlite) in paths.cache_dir.
EMBEDDING_CACHE_FILE = "embeddings.sqlite"
# The meaning stage's reader: its scores' cache, and its CTranslate2 threads (the
# machine's two cores; measured in docs/nl_parse.md).
READER_CACHE_FILE = "reader_loglik.sqlite"
READER_THREADS = 2


def meaning_model(spec: str, cache_dir: Path | None) -> str:
    """The model the meaning stage loads: ``"mpnet"`` is all-mpnet-base-v2 as
    ``chronobench install-model mpnet`` left it under ``<cache_dir>/models/``, or under the
    default cache folder's (an installed model is not a cache: ``verify`` re-runs with
    empty cache folders and still finds it); an error naming that command when it is in
    neither. Any other name or path is passed on."""
    from chronobench.backbones.split_models import EMBEDDERS, model_file

    if spec not in ("mpnet", "all-mpnet-base-v2"):
        return spec
    cache = cache_dir if cache_dir is not None else paths.cache_dir()
    for where in paths.install_dirs(cache_dir):
        folder = model_file(EMBEDDERS["all-mpnet-base-v2"], where)
        if (folder / "model.safetensors").is_file():
            return str(folder)
    raise MissingDependencyError(
        "ChronoMem's meaning stage (selector chronomem_meaning, retriever.meaning=mpnet) "
        f"reads with all-mpnet-base-v2, which is not installed (no model at "
        f"{model_file(EMBEDDERS['all-mpnet-base-v2'], cache)}): run `python -m chronobench "
        f"install-model mpnet --cache-dir {cache}` (about 400 MB from PyPI, every file checked "
        "against the official sha256), or name another sentence-transformers model"
    )


def writes_digest(writes: Sequence[StreamWrite]) -> str:
    """sha256 of a stream's public writes (the store cache's key)."""
    return sha256_text(
        canonical_json(
            [
                [
                    w.write_id,
                    w.timestamp,
                    [[c.op, c.item_id, c.text, c.author] for c in w.changes],
                    _plain(w.labels),
                    w.summary,
                ]
                for w in writes
            ]
        )
    )


def _plain(value: Any) -> Any:
    """Labels as plain JSON values (read-only mappings and tuples back to dicts and lists)."""
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@dataclass
class IngestedStream:
    """A store holding one stream's full history, and the version-id maps."""

    store: Any  # chronomem.ChronoMem
    writes: Sequence[StreamWrite]
    digest: str
    vid_of: dict[int, Any]  # write id j (0 = empty root) -> store version id
    j_of: dict[Any, int]  # store version id -> write id j

    @property
    def user(self) -> str:
        """The store scope's user (one stream per store: named by its content)."""
        return f"stream-{self.digest[:12]}"


class StoreProvider:
    """Builds ChronoMem stores with the run's embedder, retriever and reranker settings."""

    def __init__(
        self,
        *,
        embedder: Any = "minilm",
        max_cached: int = 4,
        cache_dir: str | Path | None = None,
        location: str | None = None,
        settings: str | None = None,
        **store_options: Any,
    ):
        # store_options go to ChronoMem unchanged (reranker, rrf_k0, depth, rerank_depth...).
        # cache_dir: where the persistent embedding cache lives (None: memory only).
        # location: None for in-memory SQLite stores, or a PostgreSQL URL: each store
        # then lives in a temporary schema of that database, dropped when it closes.
        # settings: a text naming everything above that shapes what a store holds and
        # how it searches (the runner writes it from the cell's spec). Providers with
        # equal settings build equal stores from equal writes, so what is read from
        # them may be shared across providers (ChronoMemSystem's prompt memo); without
        # it, this provider shares with no other.
        self.location = location
        self.settings = settings if settings is not None else f"provider-{next(_PROVIDERS)}"
        self.embedder_spec = embedder
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        # meaning: the model of ChronoMem's meaning stage ("mpnet" or a sentence-transformers
        # name or path), built beside the embedder and sharing its vector cache file.
        self.meaning_spec = store_options.pop("meaning", None)
        self.meaning_runtime = store_options.pop("meaning_runtime", None)
        self.store_options = store_options
        self.max_cached = max_cached
        self._embedder: Any = None
        self._meanings: dict[str, Any] = {}
        self._cache: dict[str, IngestedStream] = {}

    @property
    def embedder(self) -> Any:
        """One embedder per provider, so its text->vector cache is shared by all stores
        (and, with ``cache_dir``, by every cell and process using that folder)."""
        if self._embedder is None:
            from chronomem import resolve_embedder
            from chronomem.embedders import shared_cache

            self._embedder = resolve_embedder(self.embedder_spec)
            if self.cache_dir is not None:
                shared_cache(self._embedder).attach(self.cache_dir / EMBEDDING_CACHE_FILE)
        return self._embedder

    @property
    def meaning(self) -> Any:
        """The meaning stage of ``retriever.meaning`` (None without one)."""
        return None if self.meaning_spec is None else self.meaning_stage(self.meaning_spec)

    def meaning_stage(self, model: str, reader: str | None = None) -> Any:
        """A meaning stage that reads with ``model`` ("mpnet" or a sentence-transformers
        name or path), one per model: it runs in ``meaning_runtime``, or as the embedder
        does when that is unset, and its vectors go to the same persistent cache.
        ``reader``: a packaged backbone (``qwen-1b5``) that also reads the best candidates
        by query likelihood (:mod:`chronomem.reader`)."""
        if reader is not None:
            key = f"{model}+{reader}"
            if key not in self._meanings:
                from dataclasses import replace

                from chronomem.reader import ReaderStage

                base = self.meaning_stage(model)
                self._meanings[key] = replace(base, reader=ReaderStage(self.reader_model(reader)))
            return self._meanings[key]
        if model not in self._meanings:
            from chronomem.embedders import resolve_embedder, shared_cache
            from chronomem.meaning import MeaningStage

            runtime = self.meaning_runtime or "auto"
            if self.meaning_runtime is None and isinstance(self.embedder_spec, dict):
                runtime = str(self.embedder_spec.get("runtime", "auto"))
            path = meaning_model(model, self.cache_dir)
            encoder = resolve_embedder({"model": path, "runtime": runtime})
            if self.cache_dir is not None:
                shared_cache(encoder).attach(self.cache_dir / EMBEDDING_CACHE_FILE)
            self._meanings[model] = MeaningStage(encoder)
        return self._meanings[model]

    def reader_model(self, name: str) -> Any:
        """The language model of a meaning stage's reader: a packaged backbone on
        CTranslate2 (``qwen-1b5``), loaded on its first score, its scores cached beside
        the call cache when the provider has a cache folder. A model or runtime that is
        not installed fails here, before any search."""
        import importlib.util

        from chronobench.backbones.likelihood_cache import CachedLikelihood, LazyLikelihood
        from chronobench.backbones.packaged import PACKAGED_BACKBONES, gguf_path

        if name not in PACKAGED_BACKBONES:
            raise ValueError(
                f"reader {name!r}: name a packaged backbone ({', '.join(PACKAGED_BACKBONES)})"
            )
        if importlib.util.find_spec("ctranslate2") is None:
            raise MissingDependencyError(
                "ChronoMem's reader (selector chronomem_reader) runs on CTranslate2: pip "
                "install 'chronobench[llm-cpu,llm-ct2]'"
            )
        model = PACKAGED_BACKBONES[name]
        where: Path | None = None
        error: Exception | None = None
        for folder in paths.install_dirs(self.cache_dir):
            try:
                gguf_path(model, folder)
            except (FileNotFoundError, ModuleNotFoundError) as exc:
                error = error or exc
            else:
                where = folder
                break
        if where is None:
            raise MissingDependencyError(f"ChronoMem's reader: {error}") from error

        def load() -> Any:
            from chronobench.backbones.ct2_backend import CT2Backbone

            return CT2Backbone(name, threads=READER_THREADS, cache_dir=str(where))

        lazy = LazyLikelihood(
            load, f"{name}-ct2", model, {"runtime": "ctranslate2", "compute_type": "int8"}
        )
        if self.cache_dir is None:
            return lazy
        return CachedLikelihood(lazy, self.cache_dir / READER_CACHE_FILE)

    def new_store(self, path: str | None = None) -> Any:
        """An empty store with this provider's settings (``path``: SQLite file or URL;
        default: in memory, or a temporary schema on the provider's PostgreSQL server)."""
        from chronomem import ChronoMem

        if path is None and self.location:
            from chronomem.pg.temporary import temporary_store

            return temporary_store(
                self.location, embedder=self.embedder, meaning=self.meaning, **self.store_options
            )
        return ChronoMem(
            path or ":memory:", embedder=self.embedder, meaning=self.meaning, **self.store_options
        )

    def get(self, writes: Sequence[StreamWrite]) -> IngestedStream:
        """The post-exposure store of a stream's public ``writes`` (built on first use,
        then cached)."""
        for hit in self._cache.values():
            if hit.writes is writes:
                return hit
        digest = writes_digest(writes)
        hit = self._cache.get(digest)
        if hit is not None:
            return hit
        ingested = self._ingest(writes, digest)
        if len(self._cache) >= self.max_cached:
            oldest = next(iter(self._cache))
            self._cache.pop(oldest).store.close()
        self._cache[digest] = ingested
        return ingested

    def _ingest(self, writes: Sequence[StreamWrite], digest: str) -> IngestedStream:
        store = self.new_store()
        ing = IngestedStream(store=store, writes=writes, digest=digest, vid_of={}, j_of={})
        commits = [
            {
                "ops": [
                    {
                        "op": c.op,
                        "item_id": c.item_id,
                        "text": c.text,
                        "meta": {"speaker": c.author} if c.author else {},
                    }
                    for c in w.changes
                ],
                "source": "dataset",
                "reason": "ingest",
                "labels": _plain(w.labels),
                "summary": w.summary,
                "valid_time": w.timestamp,
            }
            for w in writes
        ]
        vids = store.commit_many(APP, ing.user, commits)
        root = store.versions(APP, ing.user)[0].version_id
        ing.vid_of = {0: root, **{w.write_id: vid for w, vid in zip(writes, vids, strict=True)}}
        ing.j_of = {vid: j for j, vid in ing.vid_of.items()}
        return ing

    def close(self) -> None:
        """Close every cached store."""
        for ing in self._cache.values():
            ing.store.close()
        self._cache.clear()
