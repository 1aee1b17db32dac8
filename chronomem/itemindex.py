"""An in-memory copy of S(HEAD)'s item index, scored with FTS5's BM25: what
:meth:`~chronomem.backend.Backend.match_items` returns, without the backend
scoring every matching row.

Why: item search runs the backend's lexical stage once per question, and on SQLite
most of its cost is FTS5's ``bm25()`` (which also scores the scope-tag phrase every
row matches): measured on one LoCoMo conversation, 0.60 ms per question of which the
MATCH itself is 0.11 ms; a generation cell asks ~12,000 questions, ~10 s of its 34 s.

What is kept where:

- :class:`TextTokens` (process-wide): each item text's FTS5 tokens (term ids, counts,
  length), tokenized once with FTS5's own tokenizer, since many stores, store copies
  and cells hold the same texts; and each query term's tokens.
- :class:`ItemIndex` (one per S(HEAD) state, kept beside the state's rows in
  :class:`~chronomem.reads.ItemCache`): the state's postings as one array
  sorted by term id, built from the memo with a few numpy calls (a rollback's copy of
  the store gets its own in well under a millisecond).
- The table-wide statistics FTS5 reads (rows and tokens of every column, documents
  holding each term; closed, discarded and other scopes' spans included) come from
  the backend per request (:meth:`~chronomem.backend.Backend.item_stats`).

Scores are the backend's to the last bit: the formula is :mod:`chronomem.bm25`'s,
as for descriptors (:mod:`chronomem.lexindex`); ties go
to the lower span id, as both backends order them (SQLite: FTS5 yields rows in rowid
order and ``ORDER BY ... LIMIT`` sorts stably; PostgreSQL: by span id). A request
with a quoted term FTS5 splits into several tokens (a phrase) or none goes to the
backend. Redaction: :meth:`TextTokens.forget` drops every memoised text and token
(the store drops its per-state indexes with its item cache).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chronomem import bm25
from chronomem.fts5_tokenizer import tokenizer

Entry = tuple[np.ndarray, np.ndarray, int]  # (term ids int64, counts float64, tokens)


class TextTokens:
    """Texts' and query terms' FTS5 tokens, memoised process-wide (thread-safe).

    Term ids index a vocabulary that lives as long as the memo; :meth:`forget` empties
    both and moves :attr:`epoch`, so an :class:`ItemIndex` built before is rebuilt.
    ``max_entries`` bounds the texts kept (a LoCoMo conversation holds ~600; the memo
    keeps each text as its key, so it is emptied rather than left to grow)."""

    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self.epoch = 0
        self._lock = threading.Lock()
        self._vocab: dict[str, int] = {}
        self._next_id = 0  # never reused, so a stale id cannot name another term
        self._texts: dict[str, Entry] = {}
        self._terms: dict[str, tuple[str, ...]] = {}

    def entries(self, texts: Sequence[str]) -> tuple[int, list[Entry]]:
        """(epoch, each text's (term ids, counts, token count)); unseen texts are
        tokenized in one call."""
        with self._lock:
            known = self._texts
            missing = list(dict.fromkeys(t for t in texts if t not in known))
            if len(known) + len(missing) > self.max_entries:
                known.clear()  # bounded; the vocabulary stays (ids are not reused)
                missing = list(dict.fromkeys(texts))
            if missing:
                rows, lengths = tokenizer().counts(missing)
                ids: list[list[int]] = [[] for _ in missing]
                tfs: list[list[int]] = [[] for _ in missing]
                vocab = self._vocab
                for term, doc, n in rows:
                    tid = vocab.get(term)
                    if tid is None:
                        tid = vocab[term] = self._next_id
                        self._next_id += 1
                    ids[doc].append(tid)
                    tfs[doc].append(n)
                for text, i, t, n in zip(missing, ids, tfs, lengths, strict=True):
                    known[text] = (
                        np.asarray(i, dtype=np.int64),
                        np.asarray(t, dtype=np.float64),
                        int(n),
                    )
            return self.epoch, [known[t] for t in texts]

    def tokens(self, terms: Sequence[str]) -> list[tuple[str, ...]]:
        """The token sequence FTS5 makes of each quoted query term (maybe empty)."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in terms if t not in self._terms))
            if len(self._terms) + len(missing) > self.max_entries:
                self._terms.clear()
                missing = list(dict.fromkeys(terms))
            if missing:
                for term, toks in zip(missing, tokenizer().phrases(missing), strict=True):
                    self._terms[term] = tuple(toks)
            return [self._terms[t] for t in terms]

    def ids(self, tokens: Sequence[str]) -> tuple[int, list[int]]:
        """(epoch, each token's id; -1 for a token no memoised text holds)."""
        with self._lock:
            return self.epoch, [self._vocab.get(t, -1) for t in tokens]

    def forget(self) -> None:
        """Drop every text, term and token (a redaction: none of the erased content's
        tokens stays in memory); indexes built before are rebuilt on their next use."""
        with self._lock:
            self._texts.clear()
            self._terms.clear()
            self._vocab.clear()
            self.epoch += 1


_MEMO = TextTokens()


def text_tokens() -> TextTokens:
    """The process-wide :class:`TextTokens`."""
    return _MEMO


@dataclass(frozen=True)
class ItemIndex:
    """One S(HEAD) state's item postings, rows in span order (the cache's rows)."""

    epoch: int  # the memo epoch its term ids belong to
    spans: np.ndarray  # span id per row, ascending
    dlen: np.ndarray  # float64 |D| per row: every column's tokens (the scope tag's one too)
    keys: np.ndarray  # distinct term ids, ascending
    starts: np.ndarray  # postings of keys[i]: rows[starts[i]:starts[i + 1]]
    rows: np.ndarray  # row per posting, ascending within a term
    tf: np.ndarray  # float64 occurrences per posting
    _norm: dict[str, tuple[float, np.ndarray]] = field(default_factory=dict, compare=False)

    def norm(self, avgdl: float) -> np.ndarray:
        """``k1 * (1 - b + b * |D| / avgdl)`` per row (kept for the last ``avgdl``)."""
        last = self._norm.get("avgdl")
        if last is None or last[0] != avgdl:
            last = (avgdl, bm25.length_norm(self.dlen, avgdl))
            self._norm["avgdl"] = last
        return last[1]

    def posting(self, term_id: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, tf) of the rows holding term ``term_id``; None when none does."""
        at = int(np.searchsorted(self.keys, term_id))
        if term_id < 0 or at >= self.keys.size or int(self.keys[at]) != term_id:
            return None
        lo, hi = int(self.starts[at]), int(self.starts[at + 1])
        return self.rows[lo:hi], self.tf[lo:hi]


def build(rows: Sequence[Any], memo: TextTokens | None = None) -> ItemIndex:
    """The index of ``rows`` (``(span_id, item_id, text)`` in span order)."""
    memo = memo or _MEMO
    epoch, entries = memo.entries([r[2] for r in rows])
    n = len(rows)
    spans = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
    dlen = np.fromiter((e[2] for e in entries), dtype=np.float64, count=n) + 1.0  # + the tag
    counts = np.fromiter((e[0].size for e in entries), dtype=np.int64, count=n)
    if n and counts.sum():
        ids = np.concatenate([e[0] for e in entries])
        tf = np.concatenate([e[1] for e in entries])
    else:
        ids, tf = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    row = np.repeat(np.arange(n, dtype=np.int64), counts)
    order = np.argsort(ids, kind="stable")  # stable: rows stay ascending within a term
    ids, row, tf = ids[order], row[order], tf[order]
    cut = np.flatnonzero(ids[1:] != ids[:-1]) + 1 if ids.size else np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[0], cut, [ids.size]]).astype(np.int64)
    keys = ids[starts[:-1]] if ids.size else np.zeros(0, dtype=np.int64)
    return ItemIndex(epoch, spans, dlen, keys, starts, row, tf)


def single_tokens(terms: Sequence[str], memo: TextTokens | None = None) -> list[str] | None:
    """The one token FTS5 makes of each quoted term, or None when some term makes
    several (a phrase) or none (then the backend scores the request itself)."""
    phrases = (memo or _MEMO).tokens(terms)
    if not phrases or any(len(p) != 1 for p in phrases):
        return None
    return [p[0] for p in phrases]


def score(
    ix: ItemIndex,
    present: Sequence[tuple[np.ndarray, np.ndarray] | None],
    n_docs: int,
    n_tokens: int,
    hits: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, scores) of every row holding a term, in row order, from each query
    term's :meth:`ItemIndex.posting`; ``n_docs``, ``n_tokens`` and ``hits`` are the
    backend's statistics. The arithmetic follows FTS5's ``fts5Bm25Function`` (the
    scope-tag phrase adds 0.0 and is left out)."""
    if all(p is None for p in present):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    norm = ix.norm(float(n_tokens) / float(max(n_docs, 1)))
    return bm25.score(ix.spans.size, present, hits, n_docs, norm)


def top_k(ix: ItemIndex, rows: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best ``(span_id, score)``, ties to the lower span id (row order)."""
    order = bm25.best_order(rows, scores, k)
    return list(zip(ix.spans[rows[order]].tolist(), scores[order].tolist(), strict=True))


def match(
    db: Any,
    scope_id: int,
    terms: Sequence[str],
    k: int,
    index: Any,
    memo: TextTokens | None = None,
) -> list[tuple[int, float]] | None:
    """What ``db.match_items(scope_id, terms, k)`` returns, from the index that
    ``index()`` gives (called again when a redaction made it stale); None when the
    backend must answer (a phrase or token-less term, or a negative ``k``, which SQLite
    reads as no limit)."""
    memo = memo or _MEMO
    if not terms:
        return []
    if k < 0:
        return None
    toks = single_tokens(terms, memo)
    if toks is None:
        return None
    if k == 0:
        return []
    for _ in range(3):
        ix = index()
        epoch, ids = memo.ids(toks)
        if epoch == ix.epoch:
            break
    else:  # forgotten again and again while this request ran: let the backend answer
        return None
    present = [ix.posting(t) for t in ids]
    if all(p is None for p in present):
        return []  # no visible item holds a term: no statistics needed
    n_docs, n_tokens, hits = db.item_stats(scope_id, toks)
    rows, scores = score(ix, present, n_docs, n_tokens, hits)
    return top_k(ix, rows, scores, k)
