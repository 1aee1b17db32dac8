"""The write path: normalising ops, building descriptors, and applying a commit.

Everything here runs on a connection the caller has put inside ``BEGIN
IMMEDIATE``; nothing commits or rolls back on its own.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from chronobench.memory.sql import alive, alive_at, visible
from chronobench.memory.types import OPS, InvalidOpError, NormalOp

REDACTED = "[redacted]"


def content_hash(text: str) -> str:
    """sha256 of ``text`` (the content address of an item blob)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def scope_tag(scope_id: int) -> str:
    """FTS token that confines a MATCH to one scope."""
    return f"s{scope_id}"


def normalise_ops(ops: Iterable[Any]) -> list[NormalOp]:
    """Validate ``ops`` (MemoryOp objects or mappings {op, item_id, text, meta})."""
    if isinstance(ops, (str, bytes, Mapping)) or not isinstance(ops, Iterable):
        raise InvalidOpError("ops must be a list of MemoryOp objects or mappings, not " + repr(ops))
    out: list[NormalOp] = []
    for i, raw in enumerate(ops):
        data = raw if isinstance(raw, Mapping) else getattr(raw, "__dict__", None)
        if hasattr(raw, "model_dump"):
            data = raw.model_dump()
        if not isinstance(data, Mapping):
            raise InvalidOpError(f"ops[{i}] is {type(raw).__name__}; expected MemoryOp or mapping")
        op, item_id, text = data.get("op"), data.get("item_id"), data.get("text")
        meta = dict(data.get("meta") or {})
        if op not in OPS:
            raise InvalidOpError(f"ops[{i}].op = {op!r}; choose one of {', '.join(OPS)}")
        if not isinstance(item_id, str) or not item_id:
            raise InvalidOpError(f"ops[{i}].item_id must be a non-empty string, got {item_id!r}")
        if op in ("add", "update", "consolidate") and not isinstance(text, str):
            raise InvalidOpError(f"ops[{i}] ({op} {item_id!r}) needs a text string")
        if text is not None and not isinstance(text, str):
            raise InvalidOpError(f"ops[{i}].text must be a string or None")
        out.append(NormalOp(op, item_id, text, meta))
    if not out:
        raise InvalidOpError("a commit needs at least one op")
    return out


def open_text(conn: sqlite3.Connection, scope_id: int, item_id: str) -> str | None:
    """Text of ``item_id`` in S(HEAD), or None."""
    row = conn.execute(
        "SELECT b.text FROM spans s JOIN blobs b ON b.scope_id = s.scope_id AND b.hash = s.hash "
        f"WHERE s.scope_id = ? AND s.item_id = ? AND {alive(conn, scope_id)}",
        (scope_id, item_id),
    ).fetchone()
    return row[0] if row else None


def describe(
    ops: list[NormalOp],
    summary: str | None,
    labels: Mapping[str, Any],
    lookup: Callable[[str], str | None],
) -> tuple[str, str]:
    """(dense text, lexical text) of a commit descriptor {delta, summary, op, labels}.

    One delta line per op, ``"<op>: <text>"``; deletes and redactions show the
    removed text when known (redactions never do). The dense text is the delta
    plus summary; the lexical text adds the op names, item ids and labels.
    """
    lines: list[str] = []
    for o in ops:
        if o.op == "redact":
            text = REDACTED
        elif o.text is not None:
            text = o.text
        else:
            text = lookup(o.item_id) or o.item_id
        lines.append(f"{o.op}: {text}")
    if summary:
        lines.append(f"summary: {summary}")
    dense = "\n".join(lines)
    label_txt = "; ".join(f"{k} {v}" for k, v in sorted(labels.items()))
    op_names = " ".join(sorted({o.op for o in ops}))
    ids = " ".join(o.item_id for o in ops)
    lexical = "\n".join(x for x in (dense, f"op: {op_names}", f"items: {ids}", label_txt) if x)
    return dense, lexical


def ensure_scope(conn: sqlite3.Connection, app: str, user: str) -> int:
    """Scope id of (app, user), creating it with its empty root version v_0."""
    row = conn.execute("SELECT scope_id FROM scopes WHERE app = ? AND user = ?", (app, user))
    got = row.fetchone()
    if got:
        return int(got[0])
    cur = conn.execute("INSERT INTO scopes (app, user) VALUES (?, ?)", (app, user))
    sid = int(cur.lastrowid or 0)
    conn.execute(
        "INSERT INTO versions (scope_id, version_id, seq, parent, op, created, descriptor) "
        "VALUES (?, 0, 0, NULL, 'root', ?, '')",
        (sid, time.time()),
    )
    return sid


def close_span(conn: sqlite3.Connection, span_id: int, from_seq: int, seq: int) -> None:
    """End an open span at ``seq`` (or drop it if it was opened in this same commit).

    A closed span stays in the item index (searches filter on liveness), so a later
    truncate that discards the close has nothing to re-index.
    """
    if from_seq >= seq:
        conn.execute("DELETE FROM spans WHERE span_id = ?", (span_id,))
        conn.execute("DELETE FROM item_fts WHERE rowid = ?", (span_id,))
    else:
        conn.execute("UPDATE spans SET to_seq = ? WHERE span_id = ?", (seq, span_id))


def open_span(
    conn: sqlite3.Connection, scope_id: int, item_id: str, h: str, text: str, seq: int
) -> None:
    """Start a span of (item_id, h) at ``seq`` and index it as part of S(HEAD)."""
    conn.execute(
        "INSERT OR IGNORE INTO blobs (scope_id, hash, text) VALUES (?, ?, ?)", (scope_id, h, text)
    )
    cur = conn.execute(
        "INSERT INTO spans (scope_id, item_id, hash, from_seq) VALUES (?, ?, ?, ?)",
        (scope_id, item_id, h, seq),
    )
    conn.execute(
        "INSERT INTO item_fts (rowid, tag, body) VALUES (?, ?, ?)",
        (cur.lastrowid, scope_tag(scope_id), text),
    )


def set_item(
    conn: sqlite3.Connection, scope_id: int, item_id: str, text: str | None, seq: int
) -> None:
    """Make ``item_id`` hold ``text`` (None: absent) from ``seq`` on."""
    row = conn.execute(
        "SELECT span_id, hash, from_seq FROM spans s "
        f"WHERE s.scope_id = ? AND s.item_id = ? AND {alive(conn, scope_id)}",
        (scope_id, item_id),
    ).fetchone()
    h = content_hash(text) if text is not None else None
    if row and row[1] == h:
        return
    if row:
        close_span(conn, row[0], row[2], seq)
    if text is not None and h is not None:
        open_span(conn, scope_id, item_id, h, text, seq)


def _revert_text(conn: sqlite3.Connection, scope_id: int, o: NormalOp) -> str | None:
    """Text an item-level ``revert`` op restores (meta ``to_version``, else previous value)."""
    to_version = o.meta.get("to_version")
    if to_version is not None:
        if isinstance(to_version, bool) or not isinstance(to_version, int):
            raise InvalidOpError(f"revert {o.item_id!r}: meta.to_version must be a version id")
        row = conn.execute(
            "SELECT seq FROM versions v WHERE scope_id = ? AND version_id = ? AND "
            + visible(conn, scope_id, "v.seq"),
            (scope_id, int(to_version)),
        ).fetchone()
        if row is None:
            raise InvalidOpError(f"revert {o.item_id!r}: meta.to_version {to_version} is unknown")
        cond, args = alive_at(conn, scope_id), (row[0], row[0])
    else:  # the value before the current one: the last span closed on the current history
        vis_to = visible(conn, scope_id, "s.to_seq")
        cond, args = f"s.to_seq IS NOT NULL AND {vis_to} ORDER BY s.to_seq DESC LIMIT 1", ()
    got = conn.execute(
        "SELECT b.text FROM spans s JOIN blobs b ON b.scope_id = s.scope_id AND b.hash = s.hash "
        f"WHERE s.scope_id = ? AND s.item_id = ? AND {cond}",
        (scope_id, o.item_id, *args),
    ).fetchone()
    return got[0] if got else None


def apply_commit(
    conn: sqlite3.Connection,
    scope_id: int,
    ops: list[NormalOp],
    *,
    source: str,
    reason: str,
    labels: Mapping[str, Any],
    summary: str | None,
    valid_time: str | None,
    dense_text: str,
    lexical_text: str,
    vectors: np.ndarray,
    redact_item: Callable[[str], None],
) -> int:
    """Append one version (events, spans, descriptor index, HEAD); return its id."""
    head_vid, seq, vid = conn.execute(
        "SELECT head_vid, next_seq, next_vid FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    now = time.time()
    for o in ops:
        if o.op == "redact":
            redact_item(o.item_id)
            text: str | None = None
        elif o.op == "delete":
            text = None
        elif o.op == "revert":
            text = o.text if o.text is not None else _revert_text(conn, scope_id, o)
        else:
            text = o.text
        if o.op == "consolidate":
            for other in o.meta.get("replaces", []) or []:
                set_item(conn, scope_id, str(other), None, seq)
        set_item(conn, scope_id, o.item_id, text, seq)
        conn.execute(
            "INSERT INTO events (scope_id, version_id, op, item_id, hash, meta, source, reason, "
            "recorded, valid_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                scope_id,
                vid,
                o.op,
                o.item_id,
                content_hash(text) if text is not None else None,
                json.dumps(o.meta, default=str),
                source,
                reason,
                now,
                valid_time,
            ),
        )
    op_name = ops[0].op if len({o.op for o in ops}) == 1 else "mixed"
    cur = conn.execute(
        "INSERT INTO versions (scope_id, version_id, seq, parent, op, summary, labels, source, "
        "reason, created, valid_time, descriptor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            scope_id,
            vid,
            seq,
            head_vid,
            op_name,
            summary,
            json.dumps(dict(labels), default=str),
            source,
            reason,
            now,
            valid_time,
            dense_text,
        ),
    )
    vrow = cur.lastrowid
    conn.execute(
        "INSERT INTO desc_fts (rowid, tag, body) VALUES (?, ?, ?)",
        (vrow, scope_tag(scope_id), lexical_text),
    )
    conn.executemany(
        "INSERT INTO desc_vecs (vrow, chunk, vec) VALUES (?, ?, ?)",
        [(vrow, i, np.asarray(v, dtype=np.float32).tobytes()) for i, v in enumerate(vectors)],
    )
    conn.execute(
        "UPDATE scopes SET head_vid = ?, head_seq = ?, next_vid = ?, next_seq = ?, gen = gen + 1 "
        "WHERE scope_id = ?",
        (vid, seq, vid + 1, seq + 1, scope_id),
    )
    return int(vid)
