"""An in-memory copy of a scope's lexical descriptor index, scored with FTS5's BM25.

Why: the backends' lexical stage (SQLite FTS5 ``bm25()``, or the same formula in SQL on
PostgreSQL) scores every matching descriptor, one row at a time, so it grows linearly
with history (measured: 4.5 ms at 10k writes, 80 ms at 100k for a three-word request).
Here a scope's visible descriptors are kept as numpy arrays: their lengths (read once
per scope generation, extended in place after commits) and, per term, the documents
holding it with its frequency (read from the backend the first time a request uses the
term, then kept; a commit appends its descriptor's counts). A request costs a few
vectorised operations over its terms' postings plus the backend's statistics
(:meth:`~chronomem.backend.Backend.descriptor_stats`: document count, token
total and the documents holding each term, counted as the backend's own BM25 counts
them).

The score is the backend's to the last bit: tokens come from FTS5's own tokenizer
(:class:`~chronomem.fts5_tokenizer.Fts5Tokenizer`), and the formula is
:mod:`chronomem.bm25`'s, evaluated in FTS5's operation order in float64; ties go to the
earlier version, as the backends order them. A request with a quoted term that the
tokenizer splits into several tokens (``foo_bar``: an FTS5 phrase) or into none goes
to the backend instead. A truncate rollback or a redaction rebuilds the copy (the
redacting store drops it at once: its postings hold the erased terms).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from chronomem import bm25
from chronomem.fts5_tokenizer import TOKENIZE as TOKENIZE  # re-exported
from chronomem.fts5_tokenizer import Fts5Tokenizer as Fts5Tokenizer  # re-exported
from chronomem.fts5_tokenizer import tokenizer
from chronomem.scope_cache import ScopeCache


@dataclass(frozen=True)
class LexicalIndex:
    """A scope's visible descriptors at generation ``gen``, in history order; the
    postings of a term are read from the backend the first time a request uses it."""

    gen: int
    vids: np.ndarray  # version id per document, in seq order
    docs: np.ndarray  # the backend's document key (version row) per document
    dlen: np.ndarray  # float64 |D|: every column's tokens (the scope tag's one included)
    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # term -> (document rows, tf float64)
    state: tuple[Any, ...] = ()  # what, besides appended commits, would change the documents
    last_seq: int = -1  # the last document's seq
    seqs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _norm: dict[str, tuple[float, np.ndarray]] = field(default_factory=dict, compare=False)
    _lock: Any = field(default_factory=threading.Lock, compare=False)

    def norm(self, avgdl: float) -> np.ndarray:
        """``k1 * (1 - b + b * |D| / avgdl)`` per document (kept for the last ``avgdl``)."""
        last = self._norm.get("avgdl")
        if last is None or last[0] != avgdl:
            last = (avgdl, bm25.length_norm(self.dlen, avgdl))
            self._norm["avgdl"] = last
        return last[1]

    def row_of(self) -> dict[int, int]:
        """Version id -> document row."""
        return {int(v): i for i, v in enumerate(self.vids)}

    def rows_of_docs(self, docs: np.ndarray) -> np.ndarray:
        """Document rows of backend keys ``docs`` (-1 where not a document here)."""
        order = self._norm.get("order")
        if order is None:
            perm = np.argsort(self.docs, kind="stable")
            order = (0.0, perm)
            self._norm["order"] = order
        perm = order[1]
        sorted_docs = self.docs[perm]
        at = np.searchsorted(sorted_docs, docs)
        at = np.minimum(at, max(sorted_docs.size - 1, 0))
        ok = sorted_docs.size > 0
        found = (sorted_docs[at] == docs) if ok else np.zeros(docs.size, dtype=bool)
        return np.where(found, perm[at] if ok else -1, -1)

    def posting(self, db: Any, scope_id: int, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The term's (document rows, tf), read from the backend on first use."""
        with self._lock:
            if term in self.postings:
                return self.postings[term]
        docs, tfs = db.descriptor_postings(scope_id, term)
        rows = self.rows_of_docs(np.asarray(docs, dtype=np.int64))
        keep = rows >= 0
        rows, tf = rows[keep], np.asarray(tfs, dtype=np.float64)[keep]
        order = np.argsort(rows, kind="stable")
        got = (rows[order], tf[order]) if rows.size else None
        with self._lock:
            self.postings[term] = got  # type: ignore[assignment]
        return got


def extend(
    gen: int,
    state: tuple[Any, ...],
    new: tuple[list[int], list[int], list[int], list[float]],
    bodies: Sequence[str],
    base: LexicalIndex | None = None,
) -> LexicalIndex:
    """An index of the documents ``new`` (ids, seqs, backend keys, lengths), appended to
    ``base`` when given; ``base``'s loaded postings gain the new documents' counts
    (from ``bodies``, tokenized as the backend indexed them)."""
    vids, seqs, docs, lengths = new
    ids = np.asarray(vids, dtype=np.int64)
    keys = np.asarray(docs, dtype=np.int64)
    dlen = np.asarray(lengths, dtype=np.float64)
    sq = np.asarray(seqs, dtype=np.int64)
    last = seqs[-1] if seqs else (-1 if base is None else base.last_seq)
    if base is None:
        return LexicalIndex(gen, ids, keys, dlen, {}, state, last, sq)
    with base._lock:
        postings = dict(base.postings)
    offset = int(base.vids.size)
    if postings and bodies:
        rows, _ = tokenizer().counts(list(bodies))
        for term, doc, n in rows:
            if term not in postings:
                continue  # not loaded yet: read from the backend, new documents included
            add = (np.asarray([doc + offset], dtype=np.int64), np.asarray([n], dtype=np.float64))
            old = postings[term]
            postings[term] = (
                add
                if old is None
                else (  # type: ignore[assignment]
                    np.concatenate([old[0], add[0]]),
                    np.concatenate([old[1], add[1]]),
                )
            )
    return LexicalIndex(
        gen,
        np.concatenate([base.vids, ids]),
        np.concatenate([base.docs, keys]),
        np.concatenate([base.dlen, dlen]),
        postings,
        state,
        last,
        np.concatenate([base.seqs, sq]),
    )


def cut(ix: LexicalIndex, n: int, state: tuple[Any, ...]) -> LexicalIndex:
    """``ix`` with only its first ``n`` documents (a truncate hid the rest)."""
    if n == ix.vids.size:
        return replace(ix, state=state, _norm={}, _lock=threading.Lock())
    with ix._lock:
        postings = dict(ix.postings)
    for term, got in postings.items():
        if got is not None:
            at = int(np.searchsorted(got[0], n))
            postings[term] = (got[0][:at], got[1][:at]) if at else None  # type: ignore[assignment]
    return LexicalIndex(
        ix.gen, ix.vids[:n], ix.docs[:n], ix.dlen[:n], postings, state, ix.last_seq, ix.seqs[:n]
    )


def kept_prefix(old: tuple[Any, ...], new: tuple[Any, ...], seqs: np.ndarray) -> int | None:
    """How many of the documents (``seqs``, history order) that were visible under
    :func:`change_state` ``old`` are still visible under ``new``, when they are a prefix
    (a truncate rollback hides a suffix; nothing hidden is ever shown again); None when
    the documents must be read again (a redaction rewrote some)."""
    if old == new:
        return int(seqs.size)
    if not old or not new or old[1] != new[1]:
        return None
    hidden = np.zeros(seqs.size, dtype=bool)
    for lo, hi in new[0]:
        hidden |= (seqs > lo) & (seqs <= hi)
    n = int(np.argmax(hidden)) if hidden.any() else int(seqs.size)
    return n if hidden[n:].all() else None


def single_tokens(terms: Sequence[str]) -> list[str] | None:
    """The one token FTS5 makes of each quoted term, or None when some term makes
    several (a phrase) or none (then the backend scores the request itself)."""
    phrases = tokenizer().phrases(list(terms))
    if not phrases or any(len(p) != 1 for p in phrases):
        return None
    return [p[0] for p in phrases]


def score(
    db: Any,
    scope_id: int,
    ix: LexicalIndex,
    tokens: Sequence[str],
    n_docs: int,
    n_tokens: int,
    hits: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:
    """(document rows, scores) of every document holding a token, in row order.

    ``n_docs``, ``n_tokens`` (all columns) and ``hits`` (documents holding each token)
    are the backend's statistics; the arithmetic follows FTS5's ``fts5Bm25Function``.
    """
    present = [ix.posting(db, scope_id, t) for t in tokens]
    if not any(p is not None for p in present):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    norm = ix.norm(float(n_tokens) / float(max(n_docs, 1)))
    return bm25.score(ix.vids.size, present, hits, n_docs, norm)


def top_k(
    ix: LexicalIndex, rows: np.ndarray, scores: np.ndarray, k: int
) -> list[tuple[int, float]]:
    """The ``k`` best ``(version id, score)``, ties in history order (row order)."""
    return [(int(ix.vids[rows[i]]), float(scores[i])) for i in bm25.best_order(rows, scores, k)]


def change_state(db: Any, scope_id: int) -> tuple[Any, ...]:
    """What changes a scope's visible descriptors other than a commit appending one: its
    discarded seq ranges (truncate rollbacks) and its redactions (rewritten bodies)."""
    hidden = db.conn.execute(
        "SELECT lo, hi FROM hidden WHERE scope_id = ? ORDER BY hi", (scope_id,)
    ).fetchall()
    redacts = db.conn.execute(
        "SELECT count(*) FROM audit WHERE scope_id = ? AND action = 'redact'", (scope_id,)
    ).fetchone()[0]
    return (tuple((int(a), int(b)) for a, b in hidden), int(redacts))


class LexicalCache(ScopeCache[LexicalIndex]):
    """Per-scope :class:`LexicalIndex`, rebuilt when the scope's ``gen`` moves."""

    def get(self, db: Any, scope_id: int, gen: int) -> LexicalIndex:
        """The scope's index at generation ``gen``: the cached one when current; extended
        with the versions committed since, after cutting the documents a truncate hid
        (:func:`kept_prefix`); rebuilt after a redaction (document lengths only:
        postings are read per term as requests use them)."""
        hit = self.cached(scope_id)
        if hit is not None and hit.gen == gen:
            return hit
        state = change_state(db, scope_id)
        base = None
        if hit is not None:
            keep = kept_prefix(hit.state, state, hit.seqs)
            base = None if keep is None else cut(hit, keep, state)
        after = -1 if base is None else base.last_seq
        new = db.descriptor_lengths(scope_id, after)
        bodies: list[str] = []
        if base is not None and new[0] and base.postings:
            ids, _, bodies = db.descriptor_docs(scope_id, after)
            if ids != new[0]:  # two states (a read outside one snapshot): rebuild whole
                base, bodies = None, []
                new = db.descriptor_lengths(scope_id, -1)
        built = extend(gen, state, new, bodies, base)
        return self.store(scope_id, built)


def match(
    db: Any, ix: LexicalIndex, scope_id: int, terms: Sequence[str], k: int
) -> list[tuple[int, float]] | None:
    """What ``db.match_descriptors(scope_id, terms, k)`` returns, from the index; None
    when the request has a term the index cannot score alone (see :func:`single_tokens`)."""
    if k <= 0 or not terms:
        return []
    toks = single_tokens(terms)
    if toks is None:
        return None
    n_docs, n_tokens, hits = db.descriptor_stats(scope_id, toks)
    rows, scores = score(db, scope_id, ix, toks, n_docs, n_tokens, hits)
    return top_k(ix, rows, scores, k)


def scores_of(
    db: Any, ix: LexicalIndex, scope_id: int, terms: Sequence[str], version_ids: Iterable[int]
) -> dict[int, float | None] | None:
    """What ``db.descriptor_scores`` returns for visible versions, from the index (None:
    as for :func:`match`). A version the index does not hold gets None."""
    vids = [int(v) for v in version_ids]
    toks = single_tokens(terms) if terms else []
    if toks is None:
        return None
    out: dict[int, float | None] = dict.fromkeys(vids)
    if not toks:
        return out
    n_docs, n_tokens, hits = db.descriptor_stats(scope_id, toks)
    rows, scores = score(db, scope_id, ix, toks, n_docs, n_tokens, hits)
    at = dict(zip(rows.tolist(), scores.tolist(), strict=True))
    row_of = ix.row_of()
    for v in vids:
        r = row_of.get(v)
        if r is not None and r in at:
            out[v] = float(at[r])
    return out
