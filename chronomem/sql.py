"""The store's tables, and the SQL conditions that hide discarded history.

Storage design (why intervals): the history of a scope is linear, so every
snapshot S(v) is "the items whose validity interval contains seq(v)". Each
write adds or closes one ``spans`` row per changed item, so storage grows with
the number of changes (linear in writes), not with snapshot size times versions
(a 10,000-item snapshot that changes one item costs one row). Item texts are
content-addressed blobs shared by every version that holds them. Reading S(v)
is one indexed range query (no log replay); a truncate rollback writes O(1)
rows (it hides the discarded seq range, see :func:`visible`; compaction deletes
hidden rows later); a revert rollback writes only the items that differ between
S(target) and S(HEAD).

Version ids are integers per scope, never reused: the empty root is version 0,
the first commit in a fresh scope is version 1, and after a truncate the next
commit gets a fresh id. ``VersionRecord.seq`` is the position on the current
history (0 = root); internal seqs are never reused either.

The DDL lives with the backend (SQLite: :mod:`chronomem.sqlite_backend`);
every backend keeps these tables (all rows carry ``scope_id``; a scope is one
(app, user) pair):

- ``scopes``: HEAD (version id and seq), the next version id and seq, and ``gen``,
  a counter bumped by every change so in-process caches can tell they are stale.
  Updating this row inside ``BEGIN IMMEDIATE`` is the per-scope lock.
- ``versions``: one row per version (seq 0 is the empty root), with the commit
  descriptor {delta, summary, op, labels}. Seqs are positions on one timeline
  that is never reused: a truncate rollback does not delete the discarded
  versions, it records their seq range in ``hidden``.
- ``hidden``: per scope, disjoint ranges ``(lo, hi]`` of discarded seqs. Every
  read (snapshots, search, resolve, both indexes, integrity) treats a row whose
  seq falls in a range as absent (:func:`visible`), so a truncate costs O(1) in
  the number of discarded versions; :meth:`ChronoMem.compact` deletes them.
- ``events``: the append-only log of writes (one row per op), with source,
  reason, record time and valid time. Text is referenced by content hash.
- ``blobs``: content-addressed item texts, keyed by (scope, sha256).
- ``spans``: the manifests, as validity intervals ``[from_seq, to_seq)`` of
  (item_id, hash) on the linear history; ``to_seq`` NULL means "still in HEAD".
- the backend's lexical index and vector storage (SQLite: ``item_fts``, rowid =
  spans.rowid, indexes every span's text, and searches keep only the spans alive at
  HEAD; ``desc_fts``, rowid = versions.rowid, and ``desc_vecs`` index every
  version's descriptor, and resolves keep visible ones).
- ``answers`` / ``answer_items``: answer provenance,
  ``audit``: rollbacks and redactions (metadata only, never content).
"""

from __future__ import annotations

import hashlib
from typing import Any

ALWAYS = "TRUE"  # what visible() returns for a scope that never truncated


def content_hash(text: str) -> str:
    """sha256 of ``text`` (the content address of an item blob, the ``blobs`` key)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def visible(conn: Any, scope_id: int, col: str) -> str:
    """SQL condition: the seq in column ``col`` is not in a discarded range of the scope.

    Ranges are disjoint, so only the first range ending at or after the seq can hold
    it (one index probe). A scope that never truncated gets the constant :data:`ALWAYS`.
    """
    sid = int(scope_id)
    if conn.execute("SELECT 1 FROM hidden WHERE scope_id = ? LIMIT 1", (sid,)).fetchone() is None:
        return ALWAYS
    return (
        f"COALESCE((SELECT h.lo FROM hidden h WHERE h.scope_id = {sid} AND h.hi >= {col} "
        f"ORDER BY h.hi LIMIT 1) >= {col}, TRUE)"
    )


def alive(conn: Any, scope_id: int, alias: str = "s") -> str:
    """SQL condition: span ``alias`` holds its item at HEAD (opened on the current
    history, and never closed there; a close in discarded history does not count)."""
    vis_from = visible(conn, scope_id, f"{alias}.from_seq")
    if vis_from == ALWAYS:
        return f"{alias}.to_seq IS NULL"
    vis_to = visible(conn, scope_id, f"{alias}.to_seq")
    return f"({vis_from} AND ({alias}.to_seq IS NULL OR NOT {vis_to}))"


def alive_at(conn: Any, scope_id: int, alias: str = "s") -> str:
    """SQL condition with one ``?`` (the seq, given twice): span alive at that seq."""
    vis_from = visible(conn, scope_id, f"{alias}.from_seq")
    if vis_from == ALWAYS:
        return f"{alias}.from_seq <= ? AND ({alias}.to_seq IS NULL OR {alias}.to_seq > ?)"
    vis_to = visible(conn, scope_id, f"{alias}.to_seq")
    return (
        f"{vis_from} AND {alias}.from_seq <= ? AND ({alias}.to_seq IS NULL "
        f"OR {alias}.to_seq > ? OR NOT {vis_to})"
    )


def descriptors_of(db: Any, scope_id: int, vids: Any) -> list[tuple[int, str]]:
    """``(version_id, descriptor)`` of the scope's versions ``vids`` (a few: the rules that
    read a handful of candidates' texts), in no fixed order; a missing descriptor is ""."""
    ids = list(vids)
    if not ids:
        return []
    with db.lock:
        rows = db.conn.execute(
            f"SELECT version_id, descriptor FROM versions WHERE scope_id = ? "
            f"AND version_id IN ({','.join('?' * len(ids))})",
            (scope_id, *ids),
        ).fetchall()
    return [(int(v), d or "") for v, d in rows]
