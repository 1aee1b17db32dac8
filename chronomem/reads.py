"""Read paths: a scope's row, its history, snapshots S(v), and item search over S(HEAD).

Each function takes the backend and, after :func:`find_scope`, the scope's row; none
writes. Snapshots are one indexed range query over spans (no log replay).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from chronomem import validate as val
from chronomem.backend import Backend
from chronomem.embedders import rounded, similarities
from chronomem.encoder import StoreEncoder
from chronomem.itemindex import ItemIndex, text_tokens
from chronomem.itemindex import build as build_item_index
from chronomem.itemindex import match as match_index
from chronomem.query import fts_terms
from chronomem.resolve import rrf
from chronomem.scope_cache import ScopeCache
from chronomem.sql import alive, alive_at, visible
from chronomem.types import (
    EmptyScopeError,
    Scope,
    SearchHit,
    UnknownVersionError,
    VersionRecord,
)


def find_scope(db: Backend, app: str, user: str) -> Scope | None:
    """The scope's row, or None when (app, user) has no data; validates app and user."""
    val.scope_key(app, user)
    with db.lock:
        row = db.conn.execute(
            'SELECT scope_id, head_vid, head_seq, gen FROM scopes WHERE app = ? AND "user" = ?',
            (app, user),
        ).fetchone()
    return Scope(*row) if row else None


def locked_scope(db: Backend, app: str, user: str) -> Scope | None:
    """Inside a write transaction: take the scope's write lock, then read its row (so
    HEAD cannot move before the transaction ends); None when the scope has no data."""
    sc = find_scope(db, app, user)
    if sc is None:
        return None
    db.lock_scope(sc.scope_id)
    return find_scope(db, app, user)


def require_scope(db: Backend, app: str, user: str) -> Scope:
    """The scope's row; :class:`EmptyScopeError` when it has no committed version."""
    sc = find_scope(db, app, user)
    if sc is None or sc.head_seq == 0:
        raise EmptyScopeError(
            f"scope (app={app!r}, user={user!r}) has no committed versions; commit first"
        )
    return sc


def scopes(db: Backend) -> list[tuple[str, str]]:
    """All (app, user) pairs stored."""
    with db.lock:
        return [tuple(r) for r in db.conn.execute('SELECT app, "user" FROM scopes')]


def versions(db: Backend, sc: Scope | None) -> list[VersionRecord]:
    """The versions on the current linear history, root first (``seq`` = position)."""
    if sc is None:
        return [VersionRecord(0, 0, None, "root", None, {}, 0.0)]
    with db.lock:
        rows = db.conn.execute(
            "SELECT version_id, seq, parent, op, summary, labels, created, source, reason, "
            "valid_time, descriptor FROM versions v WHERE scope_id = ? AND "
            f"{visible(db.conn, sc.scope_id, 'v.seq')} ORDER BY seq",
            (sc.scope_id,),
        ).fetchall()
    return [
        VersionRecord(r[0], pos, r[2], r[3], r[4], json.loads(r[5] or "{}"), *r[6:])
        for pos, r in enumerate(rows)
    ]


def seq_of(db: Backend, sc: Scope, version: int) -> int:
    """The seq of a version on the scope's history; :class:`UnknownVersionError` if absent."""
    val.integer(version, "version_id")
    row = db.conn.execute(
        "SELECT seq FROM versions v WHERE scope_id = ? AND version_id = ? AND "
        + visible(db.conn, sc.scope_id, "v.seq"),
        (sc.scope_id, int(version)),
    ).fetchone()
    if row is None:
        raise UnknownVersionError(
            f"version {version} is not on this scope's history (HEAD is {sc.head_vid}); "
            "list valid ids with versions(app, user)"
        )
    return int(row[0])


def snapshot(db: Backend, sc: Scope, version: int | None = None) -> dict[str, str]:
    """S(version) (default HEAD) as ``{item_id: text}``."""
    with db.lock:
        seq = sc.head_seq if version is None else seq_of(db, sc, version)
        rows = db.conn.execute(
            "SELECT s.item_id, b.text FROM spans s JOIN blobs b ON b.scope_id = s.scope_id "
            f"AND b.hash = s.hash WHERE s.scope_id = ? AND {alive_at(db.conn, sc.scope_id)} "
            "ORDER BY s.span_id",
            (sc.scope_id, seq, seq),
        ).fetchall()
    return dict(rows)


class ItemCache(ScopeCache[list[Any]]):
    """S(HEAD)'s items per scope, their vector matrix once a dense search needs it and
    their lexical index (:class:`~chronomem.itemindex.ItemIndex`) once a
    lexical one does, valid while the scope's ``gen`` holds (every change bumps it): a
    reader asking many questions of one state reads, stacks and indexes S(HEAD) once,
    not once per question. Entry: ``[gen, rows, matrix, lexical index, (item of span,
    span ids)]``, the last three filled in as searches need them."""

    def share(self, value: list[Any]) -> list[Any]:
        """A clone's own entry (same gen, same rows): what it fills in stays its own."""
        return list(value)

    def rows(self, db: Backend, sc: Scope) -> list[Any]:
        """``(span_id, item_id, text)`` of S(HEAD) in span order (caller holds the lock)."""
        hit = self.cached(sc.scope_id)
        if hit is not None and hit[0] == sc.gen:
            return hit[1]
        rows = db.conn.execute(
            "SELECT s.span_id, s.item_id, b.text FROM spans s JOIN blobs b "
            "ON b.scope_id = s.scope_id AND b.hash = s.hash "
            f"WHERE s.scope_id = ? AND {alive(db.conn, sc.scope_id)} ORDER BY s.span_id",
            (sc.scope_id,),
        ).fetchall()
        self.store(sc.scope_id, [sc.gen, rows, None, None, None])
        return rows

    def spans(self, sc: Scope, rows: list[Any]) -> tuple[dict[int, Any], np.ndarray]:
        """``{span_id: (item_id, text)}`` and the span ids of ``rows`` in row order, kept
        with the rows (a search would otherwise rebuild both per question)."""
        hit = self.cached(sc.scope_id)
        if hit is not None and hit[1] is rows and hit[4] is not None:
            return hit[4]
        got = (
            {sid: (item, text) for sid, item, text in rows},
            np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
        )
        with self._lock:
            if hit is not None and hit[1] is rows:
                hit[4] = got
        return got

    def matrix(self, sc: Scope, rows: list[Any], encoder: StoreEncoder) -> np.ndarray:
        """The vectors of ``rows`` (from the embedding cache), kept with the rows."""
        hit = self.cached(sc.scope_id)
        if hit is not None and hit[1] is rows and hit[2] is not None:
            return hit[2]
        mat = encoder.encode([t for _, _, t in rows]).astype(np.float64)  # dotted in float64
        with self._lock:
            if hit is not None and hit[1] is rows:
                hit[2] = mat
        return mat

    def index(self, sc: Scope, rows: list[Any]) -> ItemIndex:
        """The lexical index of ``rows``, kept with the rows (rebuilt once a redaction
        emptied the token memo it was built from)."""
        hit = self.cached(sc.scope_id)
        ix = hit[3] if hit is not None and hit[1] is rows else None
        if ix is not None and ix.epoch == text_tokens().epoch:
            return ix
        ix = build_item_index(rows)
        with self._lock:
            if hit is not None and hit[1] is rows:
                hit[3] = ix
        return ix


def match_items(
    db: Backend, sc: Scope, terms: list[str], k: int, cache: ItemCache, items: list[Any]
) -> list[tuple[int, float]]:
    """What ``db.match_items`` returns for S(HEAD) ``items``, from the cached in-memory
    index when it can score the request (else from the backend)."""
    got = match_index(db, sc.scope_id, terms, k, lambda: cache.index(sc, items))
    return db.match_items(sc.scope_id, terms, k) if got is None else got


def search(
    db: Backend,
    sc: Scope,
    query: str,
    k: int,
    mode: str,
    encoder: StoreEncoder,
    depth: int,
    rrf_k0: int,
    cache: ItemCache | None = None,
) -> list[SearchHit]:
    """Items of S(HEAD) relevant to ``query``: lexical and dense top-``depth`` lists over
    the items, fused by RRF (``mode`` "lexical" or "dense" uses one stage)."""
    cache = cache if cache is not None else ItemCache()
    with db.lock:
        items = cache.rows(db, sc)
        by_span, span_ids = cache.spans(sc, items)
        lists: list[list[tuple[int, float]]] = []
        terms = fts_terms(query)
        if mode != "dense" and terms:
            lists.append(match_items(db, sc, terms, depth, cache, items))
    if mode != "lexical" and items and query.strip():
        # Item vectors come from the embedding cache: S(HEAD) is embedded once.
        sims = similarities(cache.matrix(sc, items, encoder), encoder.query_vector(query))
        sims = rounded(sims)  # last-bit noise must not rank; ties: lower span id first
        order = np.argsort(-sims, kind="stable")[:depth]
        lists.append(list(zip(span_ids[order].tolist(), sims[order].tolist(), strict=True)))
    fused = rrf(lists, rrf_k0, limit=k) if len(lists) > 1 else (lists[0] if lists else [])
    return [SearchHit(*by_span[s], score) for s, score in fused[:k] if s in by_span]
