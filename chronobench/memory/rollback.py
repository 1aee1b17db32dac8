"""Restoring a version: truncate (reset) and revert-forward, index resync included.

Both run inside the caller's ``BEGIN IMMEDIATE`` transaction, so the state change
and the index changes commit together or not at all. Neither replays the log:
the spans whose validity interval crosses the target seq are exactly the rows
that differ between S(target) and S(HEAD).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable

import numpy as np

from chronobench.memory.commit import scope_tag, set_item


def _audit(conn: sqlite3.Connection, scope_id: int, action: str, detail: dict, reason: str) -> None:
    conn.execute(
        "INSERT INTO audit (scope_id, action, detail, source, reason, recorded) "
        "VALUES (?, ?, ?, 'chronomem', ?, ?)",
        (scope_id, action, json.dumps(detail), reason, time.time()),
    )


def truncate_to(
    conn: sqlite3.Connection, scope_id: int, target_vid: int, target_seq: int, reason: str
) -> int:
    """Reset HEAD to ``target_seq`` and drop every later version and its index rows.

    Cost is proportional to the rows created or closed after the target, never to
    the size of the snapshot or to the length of the history before it.
    """
    head_seq = conn.execute(
        "SELECT head_seq FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()[0]
    dropped = conn.execute(
        "SELECT vrow FROM versions WHERE scope_id = ? AND seq > ?", (scope_id, target_seq)
    ).fetchall()
    if dropped:
        conn.executemany("DELETE FROM desc_fts WHERE rowid = ?", dropped)
        conn.executemany("DELETE FROM desc_vecs WHERE vrow = ?", dropped)
        conn.execute("DELETE FROM versions WHERE scope_id = ? AND seq > ?", (scope_id, target_seq))
    # Items added after the target leave S(HEAD) and the item index.
    conn.execute(
        "DELETE FROM item_fts WHERE rowid IN (SELECT span_id FROM spans WHERE scope_id = ? "
        "AND from_seq > ? AND to_seq IS NULL)",
        (scope_id, target_seq),
    )
    conn.execute("DELETE FROM spans WHERE scope_id = ? AND from_seq > ?", (scope_id, target_seq))
    # Items that were alive at the target and closed later come back.
    reopened = conn.execute(
        "SELECT s.span_id, b.text FROM spans s JOIN blobs b "
        "ON b.scope_id = s.scope_id AND b.hash = s.hash "
        "WHERE s.scope_id = ? AND s.to_seq > ?",
        (scope_id, target_seq),
    ).fetchall()
    if reopened:
        conn.execute(
            "UPDATE spans SET to_seq = NULL WHERE scope_id = ? AND to_seq > ?",
            (scope_id, target_seq),
        )
        tag = scope_tag(scope_id)
        conn.executemany(
            "INSERT INTO item_fts (rowid, tag, body) VALUES (?, ?, ?)",
            [(sid, tag, text) for sid, text in reopened],
        )
    conn.execute(
        "UPDATE scopes SET head_vid = ?, head_seq = ?, gen = gen + 1 WHERE scope_id = ?",
        (target_vid, target_seq, scope_id),
    )
    _audit(
        conn,
        scope_id,
        "rollback_truncate",
        {"target": target_vid, "from_seq": head_seq, "dropped_versions": len(dropped)},
        reason,
    )
    return target_vid


def state_diff(conn: sqlite3.Connection, scope_id: int, target_seq: int) -> dict[str, str | None]:
    """{item_id: text at target (None = absent)} for items whose HEAD state differs."""
    changed = conn.execute(
        "SELECT DISTINCT item_id FROM spans WHERE scope_id = ? AND "
        "(from_seq > ? OR (to_seq IS NOT NULL AND to_seq > ?))",
        (scope_id, target_seq, target_seq),
    ).fetchall()
    out: dict[str, str | None] = {}
    for (item_id,) in changed:
        rows = conn.execute(
            "SELECT s.from_seq, s.to_seq, s.hash, b.text FROM spans s JOIN blobs b "
            "ON b.scope_id = s.scope_id AND b.hash = s.hash WHERE s.scope_id = ? AND s.item_id = ? "
            "AND ((s.from_seq <= ? AND (s.to_seq IS NULL OR s.to_seq > ?)) OR s.to_seq IS NULL)",
            (scope_id, item_id, target_seq, target_seq),
        ).fetchall()
        at_target = next(
            (r for r in rows if r[0] <= target_seq and (r[1] is None or r[1] > target_seq)), None
        )
        at_head = next((r for r in rows if r[1] is None), None)
        if (at_target and at_target[2]) != (at_head and at_head[2]):
            out[item_id] = at_target[3] if at_target else None
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
    head_vid, head_seq, vid = conn.execute(
        "SELECT head_vid, head_seq, next_vid FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    seq, now = head_seq + 1, time.time()
    diff = state_diff(conn, scope_id, target_seq)
    for item_id, text in diff.items():
        set_item(conn, scope_id, item_id, text, seq)
    conn.executemany(
        "INSERT INTO events (scope_id, version_id, op, item_id, hash, meta, source, reason, "
        "recorded) SELECT ?, ?, 'revert', ?, (SELECT hash FROM spans WHERE scope_id = ? AND "
        "item_id = ? AND to_seq IS NULL), ?, 'chronomem', ?, ?",
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
        "UPDATE scopes SET head_vid = ?, head_seq = ?, next_vid = ?, gen = gen + 1 "
        "WHERE scope_id = ?",
        (vid, seq, vid + 1, scope_id),
    )
    _audit(conn, scope_id, "rollback_revert", {"target": target_vid, "new": vid}, reason)
    return int(vid)
