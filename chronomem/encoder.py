"""The store's embedder with its windowing: texts in, L2-normalised window vectors out.

Every vector goes through the process-wide embedding cache of the embedder
(:func:`chronomem.embedders.shared_cache`), so a text is embedded once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from chronomem.embedders import shared_cache, split_windows, window_budget


def vector_text(descriptor: str) -> str:
    """The text a descriptor's dense vectors are computed from: the descriptor, except
    that a commit of one added item (the one line ``"add: <text>"``, as every turn of a
    turn-granularity stream is) is embedded as the item text alone. Its vector is then
    the item's own, which item search and the reranker embed anyway, so each turn is
    embedded once instead of twice (a fifth of the main job's tokens); the op name
    stays in the lexical text. Set on the tuning sets (docs/metrics.md)."""
    if descriptor.startswith("add: ") and "\n" not in descriptor:
        return descriptor[5:]
    return descriptor


class StoreEncoder:
    """Descriptor windows and vectors for one store.

    ``window_tokens``: dense windows shorter than the embedder's limit make a long
    descriptor's max-over-windows score sharper (one window ~ one topic); None = the limit.
    """

    def __init__(self, embedder: Any, window_tokens: int | None = None) -> None:
        self.embedder = embedder
        self.window_tokens = window_tokens
        self._budget: tuple[int, Any] | None = None

    def copy(self) -> StoreEncoder:
        """The same embedder and settings, with the window budget already measured."""
        other = StoreEncoder(self.embedder, self.window_tokens)
        other._budget = self._budget
        return other

    def windows(self, text: str) -> list[str]:
        """``text`` cut into windows that fit the embedder (see ``window_tokens``)."""
        if self._budget is None:
            self._budget = window_budget(self.embedder)
        max_units, count = self._budget
        if self.window_tokens:
            max_units = min(max_units, int(self.window_tokens))
        if len(text) <= max_units and text.isascii():
            return [text]  # fast path: an ASCII text never has more tokens than characters
        return split_windows(text, max_units, count)

    def embed_many(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Window every descriptor text (:func:`vector_text` of it) and embed all windows
        in one encoder call."""
        windows = [self.windows(vector_text(t)) for t in texts]
        flat = [w for ws in windows for w in ws]
        vecs = self.encode(flat) if flat else np.zeros((0, 1), np.float32)
        out, pos = [], 0
        for ws in windows:
            out.append(vecs[pos : pos + len(ws)])
            pos += len(ws)
        return out

    def embed(self, text: str) -> np.ndarray:
        """The window vectors of one text, shape (n_windows, dim)."""
        return self.embed_many([text])[0]

    def encode(self, texts: list[str]) -> np.ndarray:
        """One vector per text, unwindowed (items and requests)."""
        return shared_cache(self.embedder).encode(texts)

    def query_vector(self, query: str) -> np.ndarray:
        """The vector of a request or search query."""
        return self.encode([query])[0]
