"""Consistency checks and answer provenance for one scope."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable

from chronobench.memory.commit import scope_tag


def _ids(conn: sqlite3.Connection, sql: str, args: tuple) -> set[int]:
    return {int(r[0]) for r in conn.execute(sql, args).fetchall()}


def check_integrity(conn: sqlite3.Connection, scope_id: int) -> list[str]:
    """Problems found in the scope's state and indexes; empty when healthy."""
    problems: list[str] = []
    row = conn.execute(
        "SELECT head_vid, head_seq FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    if row is None:
        return [f"scope {scope_id} does not exist"]
    head_vid, head_seq = row
    hv = conn.execute(
        "SELECT seq FROM versions WHERE scope_id = ? AND version_id = ?", (scope_id, head_vid)
    ).fetchone()
    if hv is None:
        problems.append(f"HEAD points at version {head_vid}, which does not exist")
    elif hv[0] != head_seq:
        problems.append(f"HEAD seq {head_seq} disagrees with version {head_vid} seq {hv[0]}")
    history = conn.execute(
        "SELECT seq, version_id, parent, vrow FROM versions WHERE scope_id = ? ORDER BY seq",
        (scope_id,),
    ).fetchall()
    seqs = [h[0] for h in history]
    if seqs != list(range(len(seqs))):
        problems.append(f"history is not linear 0..n: seqs {seqs[:5]}...{seqs[-3:]}")
    if seqs and seqs[-1] != head_seq:
        problems.append(f"versions exist after HEAD (last seq {seqs[-1]}, HEAD seq {head_seq})")
    for prev, cur in zip(history, history[1:], strict=False):
        if cur[2] != prev[1]:
            problems.append(f"version {cur[1]} has parent {cur[2]}, expected {prev[1]}")
    # Manifests (spans) must point at stored blobs and lie inside the history.
    missing = conn.execute(
        "SELECT count(*) FROM spans s LEFT JOIN blobs b ON b.scope_id = s.scope_id "
        "AND b.hash = s.hash WHERE s.scope_id = ? AND b.hash IS NULL",
        (scope_id,),
    ).fetchone()[0]
    if missing:
        problems.append(f"{missing} manifest entries point at missing item blobs")
    beyond = conn.execute(
        "SELECT count(*) FROM spans WHERE scope_id = ? AND (from_seq > ? OR to_seq > ?)",
        (scope_id, head_seq, head_seq),
    ).fetchone()[0]
    if beyond:
        problems.append(f"{beyond} manifest entries belong to versions after HEAD")
    dup = conn.execute(
        "SELECT count(*) FROM (SELECT item_id FROM spans WHERE scope_id = ? AND to_seq IS NULL "
        "GROUP BY item_id HAVING count(*) > 1)",
        (scope_id,),
    ).fetchone()[0]
    if dup:
        problems.append(f"{dup} items have more than one current value")
    # Item index == S(HEAD).
    tag = f'tag : "{scope_tag(scope_id)}"'
    indexed = _ids(conn, "SELECT rowid FROM item_fts WHERE item_fts MATCH ?", (tag,))
    live = _ids(
        conn, "SELECT span_id FROM spans WHERE scope_id = ? AND to_seq IS NULL", (scope_id,)
    )
    if indexed - live:
        problems.append(f"{len(indexed - live)} stale item-index entries not in S(HEAD)")
    if live - indexed:
        problems.append(f"{len(live - indexed)} items of S(HEAD) missing from the item index")
    # Descriptor index == versions on the history (the root has no descriptor).
    vrows = {int(h[3]) for h in history if h[0] > 0}
    dfts = _ids(conn, "SELECT rowid FROM desc_fts WHERE desc_fts MATCH ?", (tag,))
    dvec = _ids(
        conn,
        "SELECT DISTINCT d.vrow FROM desc_vecs d JOIN versions v ON v.vrow = d.vrow "
        "WHERE v.scope_id = ?",
        (scope_id,),
    )
    orphan_vecs = conn.execute(
        "SELECT count(*) FROM desc_vecs WHERE vrow NOT IN (SELECT vrow FROM versions)"
    ).fetchone()[0]
    if dfts - vrows:
        problems.append(f"{len(dfts - vrows)} stale descriptor-index entries")
    if vrows - dfts:
        problems.append(f"{len(vrows - dfts)} versions missing from the descriptor index")
    if vrows - dvec:
        problems.append(f"{len(vrows - dvec)} versions missing descriptor vectors")
    if orphan_vecs:
        problems.append(f"{orphan_vecs} descriptor vectors belong to no version")
    return problems


def record_answer(
    conn: sqlite3.Connection, scope_id: int, text: str, used_items: Iterable[str]
) -> int:
    """Store an answer with the content hash of every item it relied on (at HEAD)."""
    head = conn.execute("SELECT head_vid FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone()
    cur = conn.execute(
        "INSERT INTO answers (scope_id, text, created, head_vid) VALUES (?, ?, ?, ?)",
        (scope_id, text, time.time(), head[0]),
    )
    aid = int(cur.lastrowid or 0)
    for item in dict.fromkeys(used_items):
        h = conn.execute(
            "SELECT hash FROM spans WHERE scope_id = ? AND item_id = ? AND to_seq IS NULL",
            (scope_id, item),
        ).fetchone()
        conn.execute(
            "INSERT INTO answer_items (answer_id, item_id, hash) VALUES (?, ?, ?)",
            (aid, item, h[0] if h else None),
        )
    return aid


def answers_relying_on_changed(conn: sqlite3.Connection, scope_id: int) -> list[dict]:
    """Answers that used an item whose current content differs from what they saw."""
    rows = conn.execute(
        "SELECT a.answer_id, a.text, a.created, a.head_vid, i.item_id, i.hash, s.hash "
        "FROM answers a JOIN answer_items i ON i.answer_id = a.answer_id "
        "LEFT JOIN spans s ON s.scope_id = a.scope_id AND s.item_id = i.item_id "
        "AND s.to_seq IS NULL WHERE a.scope_id = ? ORDER BY a.answer_id",
        (scope_id,),
    ).fetchall()
    out: dict[int, dict] = {}
    for aid, text, created, head_vid, item, seen, now in rows:
        if seen != now:
            entry = out.setdefault(
                aid,
                {
                    "answer_id": aid,
                    "text": text,
                    "created": created,
                    "head": head_vid,
                    "changed_items": [],
                },
            )
            entry["changed_items"].append(item)
    return list(out.values())
