"""Redaction (erasure): content disappears everywhere, audit metadata stays.

A redaction removes the matched item contents from every snapshot (their spans),
the blob store, the event log (hashes nulled, events flagged), the item and
descriptor FTS indexes, the descriptor vectors, the in-process embedding cache, and recorded answer
texts. Only an audit row (item ids, counts, reason, time) remains. SQLite's
``secure_delete`` is switched on for the transaction, the FTS indexes are
optimised and the WAL is checkpointed afterwards (by the store), so the bytes do
not linger in free pages or index segments either.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable

import numpy as np

from chronobench.memory.commit import REDACTED, scope_tag


def _matching_hashes(
    conn: sqlite3.Connection, scope_id: int, item_or_text: str
) -> tuple[list[str], list[str]]:
    """(hashes to erase, item ids affected): all contents of an item id, else blobs
    containing the text."""
    rows = conn.execute(
        "SELECT DISTINCT hash FROM spans WHERE scope_id = ? AND item_id = ?",
        (scope_id, item_or_text),
    ).fetchall()
    if rows:
        return [r[0] for r in rows], [item_or_text]
    rows = conn.execute(
        "SELECT hash FROM blobs WHERE scope_id = ? AND instr(text, ?) > 0",
        (scope_id, item_or_text),
    ).fetchall()
    hashes = [r[0] for r in rows]
    items = (
        [
            r[0]
            for r in conn.execute(
                f"SELECT DISTINCT item_id FROM spans WHERE scope_id = ? AND hash IN "
                f"({','.join('?' * len(hashes))})",
                (scope_id, *hashes),
            ).fetchall()
        ]
        if hashes
        else []
    )
    return hashes, items


def redact_in_txn(
    conn: sqlite3.Connection,
    scope_id: int,
    item_or_text: str,
    *,
    reason: str,
    source: str,
    embed: Callable[[str], np.ndarray],
) -> tuple[dict, list[str]]:
    """Erase ``item_or_text``; return (audit detail, erased texts for cache eviction)."""
    if not item_or_text:
        raise ValueError("redact needs a non-empty item id or text")
    hashes, items = _matching_hashes(conn, scope_id, item_or_text)
    texts: list[str] = []
    for h in hashes:
        row = conn.execute(
            "SELECT text FROM blobs WHERE scope_id = ? AND hash = ?", (scope_id, h)
        ).fetchone()
        if row:
            texts.append(row[0])
        conn.execute(
            "DELETE FROM item_fts WHERE rowid IN (SELECT span_id FROM spans WHERE scope_id = ? "
            "AND hash = ? AND to_seq IS NULL)",
            (scope_id, h),
        )
        conn.execute("DELETE FROM spans WHERE scope_id = ? AND hash = ?", (scope_id, h))
        conn.execute("DELETE FROM blobs WHERE scope_id = ? AND hash = ?", (scope_id, h))
        conn.execute(
            "UPDATE events SET hash = NULL, redacted = 1 WHERE scope_id = ? AND hash = ?",
            (scope_id, h),
        )
    needles = sorted({*texts, item_or_text}, key=len, reverse=True)
    scrubbed = _scrub_descriptors(conn, scope_id, needles, embed)
    for needle in needles:
        conn.execute(
            "UPDATE answers SET text = replace(text, ?, ?) WHERE scope_id = ?",
            (needle, REDACTED, scope_id),
        )
    conn.execute("UPDATE scopes SET gen = gen + 1 WHERE scope_id = ?", (scope_id,))
    detail = {"items": items, "contents": len(hashes), "descriptors": scrubbed}
    conn.execute(
        "INSERT INTO audit (scope_id, action, detail, source, reason, recorded) "
        "VALUES (?, 'redact', ?, ?, ?, ?)",
        (scope_id, json.dumps(detail), source, reason, time.time()),
    )
    return detail, texts


def _scrub_descriptors(
    conn: sqlite3.Connection, scope_id: int, needles: list[str], embed: Callable[[str], np.ndarray]
) -> int:
    """Rewrite descriptors mentioning any needle and re-index them (FTS + vectors)."""
    hits: dict[int, str] = {}
    for needle in needles:
        for vrow, desc in conn.execute(
            "SELECT vrow, descriptor FROM versions WHERE scope_id = ? AND instr(descriptor, ?) > 0",
            (scope_id, needle),
        ).fetchall():
            hits[vrow] = desc
    tag = scope_tag(scope_id)
    for vrow in list(hits):
        dense = hits[vrow]
        lexical = conn.execute("SELECT body FROM desc_fts WHERE rowid = ?", (vrow,)).fetchone()
        lexical_txt = lexical[0] if lexical else dense
        for needle in needles:
            dense = dense.replace(needle, REDACTED)
            lexical_txt = lexical_txt.replace(needle, REDACTED)
        conn.execute("UPDATE versions SET descriptor = ? WHERE vrow = ?", (dense, vrow))
        conn.execute("DELETE FROM desc_fts WHERE rowid = ?", (vrow,))
        conn.execute(
            "INSERT INTO desc_fts (rowid, tag, body) VALUES (?, ?, ?)", (vrow, tag, lexical_txt)
        )
        conn.execute("DELETE FROM desc_vecs WHERE vrow = ?", (vrow,))
        conn.executemany(
            "INSERT INTO desc_vecs (vrow, chunk, vec) VALUES (?, ?, ?)",
            [(vrow, i, v.astype(np.float32).tobytes()) for i, v in enumerate(embed(dense))],
        )
    # Lexical descriptors can hold a needle the dense text lacks (item ids): scrub those too.
    for needle in needles:
        expr = '"' + needle.replace('"', '""') + '"'
        try:
            rows = conn.execute(
                "SELECT rowid, body FROM desc_fts WHERE desc_fts MATCH ? AND tag = ?",
                (f"body : {expr}", tag),
            ).fetchall()
        except sqlite3.OperationalError:
            rows = []
        for vrow, body in rows:
            if needle in body and vrow not in hits:
                conn.execute("DELETE FROM desc_fts WHERE rowid = ?", (vrow,))
                conn.execute(
                    "INSERT INTO desc_fts (rowid, tag, body) VALUES (?, ?, ?)",
                    (vrow, tag, body.replace(needle, REDACTED)),
                )
                hits[vrow] = body
    return len(hits)


def optimise_indexes(conn: sqlite3.Connection) -> None:
    """Merge FTS segments so deleted tokens leave the index b-trees, then checkpoint."""
    conn.execute("INSERT INTO item_fts (item_fts) VALUES ('optimize')")
    conn.execute("INSERT INTO desc_fts (desc_fts) VALUES ('optimize')")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
