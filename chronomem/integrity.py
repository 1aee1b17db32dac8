"""Consistency checks and answer provenance for one scope."""

from __future__ import annotations

import time
from collections.abc import Iterable

from chronomem.backend import Backend
from chronomem.sql import alive, visible


def check_integrity(db: Backend, scope_id: int) -> list[str]:
    """Problems found in the scope's state and indexes; empty when healthy.

    Every SELECT runs in one read transaction (one snapshot), so a writer committing
    meanwhile, in this or another process, cannot make the checks see two different
    states. The caller must not hold a transaction open.
    """
    with db.read_snapshot():
        return _check(db, scope_id)


def _check(db: Backend, scope_id: int) -> list[str]:
    conn = db.conn
    problems: list[str] = []
    row = conn.execute(
        "SELECT head_vid, head_seq, next_seq FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    if row is None:
        return [f"scope {scope_id} does not exist"]
    head_vid, head_seq, next_seq = row
    vis = visible(conn, scope_id, "v.seq")
    hv = conn.execute(
        f"SELECT seq FROM versions v WHERE scope_id = ? AND version_id = ? AND {vis}",
        (scope_id, head_vid),
    ).fetchone()
    if hv is None:
        problems.append(f"HEAD points at version {head_vid}, which is not on the history")
    elif hv[0] != head_seq:
        problems.append(f"HEAD seq {head_seq} disagrees with version {head_vid} seq {hv[0]}")
    ranges = conn.execute(
        "SELECT lo, hi FROM hidden WHERE scope_id = ? ORDER BY hi", (scope_id,)
    ).fetchall()
    for i, (lo, hi) in enumerate(ranges):
        nxt_lo = ranges[i + 1][0] if i + 1 < len(ranges) else None
        if not 0 <= lo < hi < next_seq or (nxt_lo is not None and nxt_lo < hi):
            problems.append(f"discarded range ({lo}, {hi}] is malformed or overlaps the next")
    history = conn.execute(
        f"SELECT seq, version_id, parent, vrow FROM versions v WHERE scope_id = ? AND {vis} "
        "ORDER BY seq",
        (scope_id,),
    ).fetchall()
    if not history or history[0][0] != 0:
        problems.append("the root version (seq 0) is missing")
    if history and history[-1][0] != head_seq:
        problems.append(f"versions exist after HEAD (last seq {history[-1][0]}, HEAD {head_seq})")
    if any(h[0] >= next_seq for h in history):
        problems.append(f"versions have seqs at or beyond next_seq {next_seq}")
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
    vis_from = visible(conn, scope_id, "s.from_seq")
    beyond = conn.execute(
        f"SELECT count(*) FROM spans s WHERE s.scope_id = ? AND {vis_from} AND s.from_seq > ?",
        (scope_id, head_seq),
    ).fetchone()[0]
    if beyond:
        problems.append(f"{beyond} manifest entries belong to versions after HEAD")
    live_cond = alive(conn, scope_id)
    dup = conn.execute(
        f"SELECT count(*) FROM (SELECT s.item_id FROM spans s WHERE s.scope_id = ? AND "
        f"{live_cond} GROUP BY s.item_id HAVING count(*) > 1) AS d",
        (scope_id,),
    ).fetchone()[0]
    if dup:
        problems.append(f"{dup} items have more than one current value")
    # Item index: every span of the scope, and nothing else.
    indexed = db.indexed_items(scope_id)
    spans = {
        int(r[0]) for r in conn.execute("SELECT span_id FROM spans WHERE scope_id = ?", (scope_id,))
    }
    if indexed - spans:
        problems.append(f"{len(indexed - spans)} stale item-index entries")
    if spans - indexed:
        problems.append(f"{len(spans - indexed)} items missing from the item index")
    # Descriptor index: every version but the root, visible or discarded, and nothing else.
    all_v = conn.execute(
        "SELECT vrow, seq FROM versions WHERE scope_id = ?", (scope_id,)
    ).fetchall()
    vrows = {int(r[0]) for r in all_v if r[1] > 0}
    dfts = db.indexed_descriptors(scope_id)
    dvec = db.vector_owners(scope_id)
    orphan_vecs = db.orphan_vectors()
    if dfts - vrows:
        problems.append(f"{len(dfts - vrows)} stale descriptor-index entries")
    if vrows - dfts:
        problems.append(f"{len(vrows - dfts)} versions missing from the descriptor index")
    if vrows - dvec:
        problems.append(f"{len(vrows - dvec)} versions missing descriptor vectors")
    if orphan_vecs:
        problems.append(f"{orphan_vecs} descriptor vectors belong to no version")
    return problems


def record_answer(db: Backend, scope_id: int, text: str, used_items: Iterable[str]) -> int:
    """Store an answer with the content hash of every item it relied on (at HEAD)."""
    conn = db.conn
    head = conn.execute("SELECT head_vid FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone()
    aid = db.insert(
        "INSERT INTO answers (scope_id, text, created, head_vid) VALUES (?, ?, ?, ?)",
        (scope_id, text, time.time(), head[0]),
        "answer_id",
    )
    live = alive(conn, scope_id)
    for item in dict.fromkeys(used_items):
        h = conn.execute(
            f"SELECT s.hash FROM spans s WHERE s.scope_id = ? AND s.item_id = ? AND {live}",
            (scope_id, item),
        ).fetchone()
        conn.execute(
            "INSERT INTO answer_items (answer_id, item_id, hash) VALUES (?, ?, ?)",
            (aid, item, h[0] if h else None),
        )
    return aid


def answers_relying_on_changed(db: Backend, scope_id: int) -> list[dict]:
    """Answers that used an item whose current content differs from what they saw."""
    with db.lock:
        live = alive(db.conn, scope_id)
        rows = db.conn.execute(
            "SELECT a.answer_id, a.text, a.created, a.head_vid, i.item_id, i.hash, "
            f"(SELECT s.hash FROM spans s WHERE s.scope_id = a.scope_id AND s.item_id = i.item_id "
            f"AND {live}) FROM answers a JOIN answer_items i ON i.answer_id = a.answer_id "
            "WHERE a.scope_id = ? ORDER BY a.answer_id",
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
