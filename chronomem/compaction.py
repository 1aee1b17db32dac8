"""Secure deletion: the ``secure_delete`` + ``purge`` block, and compaction of the
history that truncate rollbacks discarded.

:func:`erasing` wraps every write that deletes content (redaction, compaction) so the
deleted bytes are zeroed in the file, not just unlinked; :func:`compact` deletes a
scope's hidden history (:func:`discard_hidden`) inside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from chronomem.backend import Backend
from chronomem.reads import find_scope, locked_scope
from chronomem.sql import ALWAYS, visible


@contextmanager
def erasing(db: Backend, active: bool = True) -> Iterator[None]:
    """When ``active``: ``secure_delete`` for the block, then a ``purge`` if it succeeded."""
    if not active:
        yield
        return
    with db.secure_delete():
        yield
        db.purge()


def compact(db: Backend, app: str, user: str) -> dict[str, int]:
    """:meth:`ChronoMem.compact`: delete the scope's discarded history under
    ``secure_delete``, then purge; returns counts of versions, spans and blobs removed."""
    if find_scope(db, app, user) is None:
        return {"versions": 0, "spans": 0, "blobs": 0}
    with db.lock, erasing(db), db.transaction():
        sc = locked_scope(db, app, user)
        assert sc is not None
        return discard_hidden(db, sc.scope_id)


def discard_hidden(db: Backend, scope_id: int) -> dict[str, int]:
    """Delete the rows of discarded (hidden) history; returns counts of what went.

    Hidden versions go with their events and descriptor index rows, spans opened in
    hidden history go with their item-index rows, spans whose close was discarded are
    reopened, and blobs no span refers to any more are deleted.
    """
    conn = db.conn
    hidden_v = visible(conn, scope_id, "v.seq")
    if hidden_v == ALWAYS:
        return {"versions": 0, "spans": 0, "blobs": 0}
    vrows = conn.execute(
        f"SELECT v.vrow, v.version_id FROM versions v WHERE v.scope_id = ? AND NOT {hidden_v}",
        (scope_id,),
    ).fetchall()
    db.unindex_descriptors(r[0] for r in vrows)
    db.delete_vectors(r[0] for r in vrows)
    # Set-based deletes, by the same condition as the select above: one statement per
    # row was a round trip per row on PostgreSQL (at 10,000 writes, 9,000 versions and
    # 11,000 spans: 1.8 s of a 4 s compaction).
    conn.execute(
        "DELETE FROM events WHERE scope_id = ? AND version_id IN (SELECT v.version_id "
        f"FROM versions v WHERE v.scope_id = ? AND NOT {hidden_v})",
        (scope_id, scope_id),
    )
    conn.execute(f"DELETE FROM versions AS v WHERE v.scope_id = ? AND NOT {hidden_v}", (scope_id,))
    vis_from = visible(conn, scope_id, "s.from_seq")
    vis_to = visible(conn, scope_id, "s.to_seq")
    gone = conn.execute(
        f"SELECT s.span_id FROM spans s WHERE s.scope_id = ? AND NOT {vis_from}", (scope_id,)
    ).fetchall()
    db.unindex_items(g[0] for g in gone)
    conn.execute(f"DELETE FROM spans AS s WHERE s.scope_id = ? AND NOT {vis_from}", (scope_id,))
    conn.execute(
        f"UPDATE spans AS s SET to_seq = NULL WHERE s.scope_id = ? AND s.to_seq IS NOT NULL "
        f"AND NOT {vis_to}",
        (scope_id,),
    )
    # An anti-join each backend runs through the spans (scope_id, hash) index. NOT IN
    # (a subquery) was quadratic on PostgreSQL once the scope's span hashes outgrew
    # work_mem (no hashed subplan): at 100,000 writes that one DELETE ran for minutes.
    blobs = conn.execute(
        "DELETE FROM blobs WHERE scope_id = ? AND NOT EXISTS (SELECT 1 FROM spans s "
        "WHERE s.scope_id = blobs.scope_id AND s.hash = blobs.hash)",
        (scope_id,),
    ).rowcount
    conn.execute("DELETE FROM hidden WHERE scope_id = ?", (scope_id,))
    conn.execute("UPDATE scopes SET gen = gen + 1 WHERE scope_id = ?", (scope_id,))
    return {"versions": len(vrows), "spans": len(gone), "blobs": max(blobs, 0)}
