"""Item validity intervals (spans): the write primitives shared by commits and reverts.

A span says "item x holds the blob with hash h from seq a until seq b" (b NULL: still
in HEAD); see :mod:`chronomem.sql`. Everything here runs inside the caller's
write transaction.
"""

from __future__ import annotations

from chronomem.backend import Backend
from chronomem.sql import alive
from chronomem.sql import content_hash as content_hash  # re-exported


def open_text(db: Backend, scope_id: int, item_id: str) -> str | None:
    """Text of ``item_id`` in S(HEAD), or None."""
    row = db.conn.execute(
        "SELECT b.text FROM spans s JOIN blobs b ON b.scope_id = s.scope_id AND b.hash = s.hash "
        f"WHERE s.scope_id = ? AND s.item_id = ? AND {alive(db.conn, scope_id)}",
        (scope_id, item_id),
    ).fetchone()
    return row[0] if row else None


def close_span(db: Backend, span_id: int, from_seq: int, seq: int) -> None:
    """End an open span at ``seq`` (or drop it if it was opened in this same commit).

    A closed span stays in the item index (searches filter on liveness), so a later
    truncate that discards the close has nothing to re-index.
    """
    if from_seq >= seq:
        db.conn.execute("DELETE FROM spans WHERE span_id = ?", (span_id,))
        db.unindex_items([span_id])
    else:
        db.conn.execute("UPDATE spans SET to_seq = ? WHERE span_id = ?", (seq, span_id))


def open_span(db: Backend, scope_id: int, item_id: str, h: str, text: str, seq: int) -> None:
    """Start a span of (item_id, h) at ``seq`` and index it as part of S(HEAD)."""
    db.conn.execute(
        "INSERT INTO blobs (scope_id, hash, text) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (scope_id, h, text),
    )
    span_id = db.insert(
        "INSERT INTO spans (scope_id, item_id, hash, from_seq) VALUES (?, ?, ?, ?)",
        (scope_id, item_id, h, seq),
        "span_id",
    )
    db.index_item(scope_id, span_id, text)


def set_item(db: Backend, scope_id: int, item_id: str, text: str | None, seq: int) -> None:
    """Make ``item_id`` hold ``text`` (None: absent) from ``seq`` on."""
    row = db.conn.execute(
        "SELECT span_id, hash, from_seq FROM spans s "
        f"WHERE s.scope_id = ? AND s.item_id = ? AND {alive(db.conn, scope_id)}",
        (scope_id, item_id),
    ).fetchone()
    h = content_hash(text) if text is not None else None
    if row and row[1] == h:
        return
    if row:
        close_span(db, row[0], row[2], seq)
    if text is not None and h is not None:
        open_span(db, scope_id, item_id, h, text, seq)
