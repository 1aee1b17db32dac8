"""Restoring a version: truncate (reset) and revert-forward.

:func:`restore` runs either in one write transaction, so the state change and the
index changes commit together or not at all. Neither replays the log.

Truncate is O(1) in the number of discarded versions: it moves HEAD and records the
discarded seq range in ``hidden`` (one row, merged with the ranges it covers); every
read ignores rows in hidden ranges. :func:`chronomem.erasure.compact`
deletes those rows later.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from chronomem.backend import Backend
from chronomem.reads import locked_scope, require_scope, seq_of
from chronomem.spans import set_item
from chronomem.sql import alive, alive_at, visible
from chronomem.types import HeadMovedError, RollbackMode, Scope


def restore(
    db: Backend,
    app: str,
    user: str,
    version_id: int,
    mode: RollbackMode,
    reason: str,
    embed: Callable[[str], np.ndarray],
    expected_head: int | None = None,
    keep: Callable[[Scope], Any] | None = None,
) -> int:
    """Restore S(version_id) of the scope (app, user) and return the new HEAD; the
    scope's row is read inside the write transaction, under the scope's lock. With
    ``expected_head``, a HEAD that moved since (another writer) raises
    :class:`HeadMovedError` and nothing changes. ``keep(scope)`` runs in the same
    transaction before anything changes (a rollback's ``keep_as`` forks the HEAD it
    leaves there, so the branch exists exactly when the rollback happened)."""
    with db.transaction():
        locked_scope(db, app, user)
        sc = require_scope(db, app, user)
        if expected_head is not None and sc.head_vid != expected_head:
            raise HeadMovedError(
                f"HEAD of scope (app={app!r}, user={user!r}) moved from {expected_head} to "
                f"{sc.head_vid} since the rollback was planned; nothing was changed; plan "
                "again"
            )
        seq = seq_of(db, sc, version_id)
        if keep is not None:
            keep(sc)
        if mode == "truncate":
            return truncate_to(db, sc.scope_id, int(version_id), seq, reason)
        return revert_to(db, sc.scope_id, int(version_id), seq, reason, embed)


def audit(db: Backend, scope_id: int, action: str, detail: dict, reason: str) -> None:
    """Append an audit row (metadata only)."""
    db.conn.execute(
        "INSERT INTO audit (scope_id, action, detail, source, reason, recorded) "
        "VALUES (?, ?, ?, 'chronomem', ?, ?)",
        (scope_id, action, json.dumps(detail), reason, time.time()),
    )


def truncate_to(db: Backend, scope_id: int, target_vid: int, target_seq: int, reason: str) -> int:
    """Reset HEAD to ``target_seq``; every later seq becomes hidden (discarded).

    Costs a constant number of row writes (plus the ranges it absorbs, each written
    once by an earlier truncate), whatever the amount of history discarded.
    """
    conn = db.conn
    head_vid, next_seq = conn.execute(
        "SELECT head_vid, next_seq FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    # Every seq after the target is either on the discarded branch or already hidden.
    conn.execute("DELETE FROM hidden WHERE scope_id = ? AND lo >= ?", (scope_id, target_seq))
    if next_seq - 1 > target_seq:
        conn.execute(
            "INSERT INTO hidden (scope_id, lo, hi) VALUES (?, ?, ?)",
            (scope_id, target_seq, next_seq - 1),
        )
    conn.execute(
        "UPDATE scopes SET head_vid = ?, head_seq = ?, gen = gen + 1 WHERE scope_id = ?",
        (target_vid, target_seq, scope_id),
    )
    audit(db, scope_id, "rollback_truncate", {"target": target_vid, "from": head_vid}, reason)
    return target_vid


def state_diff(conn: Any, scope_id: int, target_seq: int) -> dict[str, str | None]:
    """{item_id: text at target (None = absent)} for items whose HEAD state differs."""
    vis_from = visible(conn, scope_id, "c.from_seq")
    vis_to = visible(conn, scope_id, "c.to_seq")
    # Only items with a span opened or closed after the target on the current history
    # can differ between S(target) and S(HEAD); two set queries, no per-item round trip.
    changed = (
        "WITH changed AS (SELECT DISTINCT c.item_id FROM spans c WHERE c.scope_id = ? AND "
        f"((c.from_seq > ? AND {vis_from}) OR (c.to_seq > ? AND {vis_to} AND {vis_from}))) "
    )
    args = (scope_id, target_seq, target_seq)
    then = {
        item: (h, text)
        for item, h, text in conn.execute(
            changed + "SELECT s.item_id, s.hash, b.text FROM spans s JOIN blobs b ON "
            "b.scope_id = s.scope_id AND b.hash = s.hash WHERE s.scope_id = ? AND "
            f"s.item_id IN (SELECT item_id FROM changed) AND {alive_at(conn, scope_id)}",
            (*args, scope_id, target_seq, target_seq),
        )
    }
    now = dict(
        conn.execute(
            changed + "SELECT s.item_id, s.hash FROM spans s WHERE s.scope_id = ? AND "
            f"s.item_id IN (SELECT item_id FROM changed) AND {alive(conn, scope_id)}",
            (*args, scope_id),
        ).fetchall()
    )
    out: dict[str, str | None] = {}
    for item in sorted(set(then) | set(now)):
        h_then = then[item][0] if item in then else None
        if h_then != now.get(item):
            out[item] = then[item][1] if item in then else None
    return out


def revert_to(
    db: Backend,
    scope_id: int,
    target_vid: int,
    target_seq: int,
    reason: str,
    embed: Callable[[str], np.ndarray],
) -> int:
    """Append a version whose content equals S(target); history grows, nothing is dropped."""
    diff = state_diff(db.conn, scope_id, target_seq)
    vid = append_revert(
        db,
        scope_id,
        diff,
        {"to_version": target_vid},
        summary=f"revert to version {target_vid}",
        labels={"reverted_to": target_vid},
        dense=f"revert: memory restored to version {target_vid}",
        reason=reason,
        embed=embed,
    )
    audit(db, scope_id, "rollback_revert", {"target": target_vid, "new": vid}, reason)
    return vid


def append_revert(
    db: Backend,
    scope_id: int,
    diff: dict[str, str | None],
    meta: dict,
    *,
    summary: str,
    labels: dict,
    dense: str,
    reason: str,
    embed: Callable[[str], np.ndarray],
) -> int:
    """Append one ``revert`` version that sets each item of ``diff`` to its text (None:
    absent), with a ``revert`` event per item carrying ``meta``; returns its id. Shared by
    the revert rollback and the selective revert (:mod:`chronomem.selective`)."""
    conn = db.conn
    head_vid, seq, vid = conn.execute(
        "SELECT head_vid, next_seq, next_vid FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    now = time.time()
    meta_json = json.dumps(meta)
    bulk = getattr(db, "revert_items", None)  # a backend's set-based path
    if bulk is not None:
        bulk(scope_id, diff, seq, vid, meta_json, reason, now)
    else:
        for item_id, text in diff.items():
            set_item(db, scope_id, item_id, text, seq)
        live = alive(conn, scope_id)
        conn.executemany(
            "INSERT INTO events (scope_id, version_id, op, item_id, hash, meta, source, "
            "reason, recorded) SELECT ?, ?, 'revert', ?, (SELECT s.hash FROM spans s WHERE "
            f"s.scope_id = ? AND s.item_id = ? AND {live}), ?, 'chronomem', ?, ?",
            [(scope_id, vid, item, scope_id, item, meta_json, reason, now) for item in diff],
        )
    vrow = db.insert(
        "INSERT INTO versions (scope_id, version_id, seq, parent, op, summary, labels, source, "
        "reason, created, descriptor) VALUES (?, ?, ?, ?, 'revert', ?, ?, 'chronomem', ?, ?, ?)",
        (scope_id, vid, seq, head_vid, summary, json.dumps(labels), reason, now, dense),
        "vrow",
    )
    db.index_descriptor(scope_id, vrow, dense + "\nop: revert")
    db.put_vectors(vrow, embed(dense))
    conn.execute(
        "UPDATE scopes SET head_vid = ?, head_seq = ?, next_vid = ?, next_seq = ?, gen = gen + 1 "
        "WHERE scope_id = ?",
        (vid, seq, vid + 1, seq + 1, scope_id),
    )
    return int(vid)
