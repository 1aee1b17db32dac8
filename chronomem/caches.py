"""Every in-memory cache one store object owns, in one holder.

Each is a :class:`~chronomem.scope_cache.ScopeCache` keyed by scope and valid
for the scope's ``gen``: the descriptor index (:class:`LexicalCache`), the descriptor
vector matrix (:class:`DenseCache`), S(HEAD)'s rows, vectors and item index
(:class:`ItemCache`) and the episode boundaries (:class:`EpisodeCache`). A read takes
the scope's row (``gen`` included) in its one read snapshot and asks the caches for
that ``gen``, so every read of a cache reads one consistent state.

A clone gets :meth:`StoreCaches.copy` (same gens, same rows: the values stay valid);
redaction, a commit with a ``redact`` op, a selective revert that redacts and
compaction call :meth:`StoreCaches.drop_text`, so no cached copy keeps a text the store
no longer holds. The process-wide caches (embedding vectors, item tokens, the
reranker's descriptor terms) forget erased texts in
:func:`chronomem.erasure.forget`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chronomem.dense import DenseCache
from chronomem.lexindex import LexicalCache
from chronomem.reads import ItemCache
from chronomem.resolve import EpisodeCache


@dataclass(frozen=True)
class StoreCaches:
    """The per-store caches (see the module docstring)."""

    lexicon: LexicalCache = field(default_factory=LexicalCache)
    dense: DenseCache = field(default_factory=DenseCache)
    items: ItemCache = field(default_factory=ItemCache)
    episodes: EpisodeCache = field(default_factory=EpisodeCache)

    def copy(self) -> StoreCaches:
        """The caches of a cloned store, sharing the current values."""
        return StoreCaches(
            self.lexicon.copy(), self.dense.copy(), self.items.copy(), self.episodes.copy()
        )

    def drop_text(self) -> None:
        """Forget every cached value built from the store's texts: descriptor postings
        and vectors, S(HEAD)'s rows, vectors and tokens, episode labels, of every scope."""
        for cache in (self.lexicon, self.dense, self.items, self.episodes):
            cache.drop()
