"""Restoring a version: truncate (reset), revert-forward, and compaction.

Truncate and revert run inside the caller's ``BEGIN IMMEDIATE`` transaction, so the
state change and the index changes commit together or not at all. Neither replays
the log.

Truncate is O(1) in the number of discarded versions: it moves HEAD and records the
discarded seq range in ``hidden`` (one row, merged with the ranges it covers); every
read ignores rows in hidden ranges. :func:`compact` deletes those rows later.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable

import numpy as np

from chronobench.memory.commit import scope_tag, set_item
from chronobench.memory.sql import alive, alive_at, visible


def audit(conn: sqlite3.Connection, scope_id: int, action: str, detail: dict, reason: str) -> None:
    """Append an audit row (metadata only)."""
    conn.execute(
        "INSERT INTO audit (scope_id, action, detail, source, reason, recorded) "
        "VALUES (?, ?, ?, 'chronomem', ?, ?)",
        (scope_id, action, json.dumps(detail), reason, time.time()),
    )


def truncate_to(
    conn: sqlite3.Connection, scope_id: int, target_vid: int, target_seq: int, reason: str
) -> int:
    """Reset HEAD to ``target_seq``; every later seq becomes hidden (discarded).

    Costs a constant number of row writes (plus the ranges it absorbs, each written
    once by an earlier truncate), whatever the amount of history discarded.
    """
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
    audit(conn, scope_id, "rollback_truncate", {"target": target_vid, "from": head_vid}, reason)
    return target_vid


def state_diff(conn: sqlite3.Connection, scope_id: int, target_seq: int) -> dict[str, str | None]:
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
    conn: sqlite3.Connection,
    scope_id: int,
    target_vid: int,
    target_seq: int,
    reason: str,
    embed: Callable[[str], np.ndarray],
) -> int:
    """Append a version whose content equals S(target); history grows, nothing is dropped."""
    head_vid, seq, vid = conn.execute(
        "SELECT head_vid, next_seq, next_vid FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    now = time.time()
    diff = state_diff(conn, scope_id, target_seq)
    for item_id, text in diff.items():
        set_item(conn, scope_id, item_id, text, seq)
    live = alive(conn, scope_id)
    conn.executemany(
        "INSERT INTO events (scope_id, version_id, op, item_id, hash, meta, source, reason, "
        "recorded) SELECT ?, ?, 'revert', ?, (SELECT s.hash FROM spans s WHERE s.scope_id = ? AND "
        f"s.item_id = ? AND {live}), ?, 'chronomem', ?, ?",
        [
            (
                scope_id,
                vid,
                item,
                scope_id,
                item,
                json.dumps({"to_version": target_vid}),
                reason,
                now,
            )
            for item in diff
        ],
    )
    dense = f"revert: memory restored to version {target_vid}"
    cur = conn.execute(
        "INSERT INTO versions (scope_id, version_id, seq, parent, op, summary, labels, source, "
        "reason, created, descriptor) VALUES (?, ?, ?, ?, 'revert', ?, ?, 'chronomem', ?, ?, ?)",
        (
            scope_id,
            vid,
            seq,
            head_vid,
            f"revert to version {target_vid}",
            json.dumps({"reverted_to": target_vid}),
            reason,
            now,
            dense,
        ),
    )
    conn.execute(
        "INSERT INTO desc_fts (rowid, tag, body) VALUES (?, ?, ?)",
        (cur.lastrowid, scope_tag(scope_id), dense + "\nop: revert"),
    )
    conn.executemany(
        "INSERT INTO desc_vecs (vrow, chunk, vec) VALUES (?, ?, ?)",
        [(cur.lastrowid, i, v.astype(np.float32).tobytes()) for i, v in enumerate(embed(dense))],
    )
    conn.execute(
        "UPDATE scopes SET head_vid = ?, head_seq = ?, next_vid = ?, next_seq = ?, gen = gen + 1 "
        "WHERE scope_id = ?",
        (vid, seq, vid + 1, seq + 1, scope_id),
    )
    audit(conn, scope_id, "rollback_revert", {"target": target_vid, "new": vid}, reason)
    return int(vid)


def compact(conn: sqlite3.Connection, scope_id: int) -> dict[str, int]:
    """Delete the rows of discarded (hidden) history; returns counts of what went.

    Hidden versions go with their events and descriptor index rows, spans opened in
    hidden history go with their item-index rows, spans whose close was discarded are
    reopened, and blobs no span refers to any more are deleted. The caller runs this
    in a write transaction under ``secure_delete`` and optimises the FTS indexes after.
    """
    hidden_v = visible(conn, scope_id, "v.seq")
    if hidden_v == "1":
        return {"versions": 0, "spans": 0, "blobs": 0}
    vrows = conn.execute(
        f"SELECT v.vrow, v.version_id FROM versions v WHERE v.scope_id = ? AND NOT {hidden_v}",
        (scope_id,),
    ).fetchall()
    conn.executemany("DELETE FROM desc_fts WHERE rowid = ?", [(r[0],) for r in vrows])
    conn.executemany("DELETE FROM desc_vecs WHERE vrow = ?", [(r[0],) for r in vrows])
    conn.executemany(
        "DELETE FROM events WHERE scope_id = ? AND version_id = ?",
        [(scope_id, r[1]) for r in vrows],
    )
    conn.executemany("DELETE FROM versions WHERE vrow = ?", [(r[0],) for r in vrows])
    vis_from = visible(conn, scope_id, "s.from_seq")
    vis_to = visible(conn, scope_id, "s.to_seq")
    gone = conn.execute(
        f"SELECT s.span_id FROM spans s WHERE s.scope_id = ? AND NOT {vis_from}", (scope_id,)
    ).fetchall()
    conn.executemany("DELETE FROM item_fts WHERE rowid = ?", gone)
    conn.executemany("DELETE FROM spans WHERE span_id = ?", gone)
    conn.execute(
        f"UPDATE spans AS s SET to_seq = NULL WHERE s.scope_id = ? AND s.to_seq IS NOT NULL "
        f"AND NOT {vis_to}",
        (scope_id,),
    )
    blobs = conn.execute(
        "DELETE FROM blobs WHERE scope_id = ? AND hash NOT IN "
        "(SELECT hash FROM spans WHERE scope_id = ?)",
        (scope_id, scope_id),
    ).rowcount
    conn.execute("DELETE FROM hidden WHERE scope_id = ?", (scope_id,))
    conn.execute("UPDATE scopes SET gen = gen + 1 WHERE scope_id = ?", (scope_id,))
    return {"versions": len(vrows), "spans": len(gone), "blobs": max(blobs, 0)}
