"""The write path: validating writes, building descriptors, and applying commits.

:func:`commit_writes` embeds every descriptor before its transactions (so the write
lock is held for milliseconds) and applies at most ``BATCH_TXN`` writes per
transaction. A ``redact`` op erases through :mod:`chronomem.erasure`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from chronomem import erasure
from chronomem import validate as val
from chronomem.backend import Backend
from chronomem.encoder import StoreEncoder
from chronomem.spans import content_hash, open_text, set_item
from chronomem.sql import alive_at, visible
from chronomem.types import OPS, REDACTED, InvalidOpError, NormalOp, Scope

_WRITE_KEYS = {"ops", "source", "reason", "labels", "summary", "valid_time", "version"}
BATCH_TXN = 200  # writes per transaction in commit_writes: bounds how long others wait
OnCommit = Callable[[Any, int, int], None]  # (conn, scope_id, version_id)


def single_write(
    ops: Any,
    source: Any,
    reason: Any,
    labels: Any = None,
    summary: Any = None,
    valid_time: Any = None,
) -> dict[str, Any]:
    """The write of one ``ChronoMem.commit`` call, its arguments checked (TypeError)."""
    val.no_nul(val.text(source, "source", empty=True), "source")
    val.no_nul(val.text(reason, "reason", empty=True), "reason")
    val.no_nul(val.optional_text(summary, "summary"), "summary")
    val.no_nul(val.optional_text(valid_time, "valid_time"), "valid_time")
    if labels is not None and not isinstance(labels, Mapping):
        raise TypeError(f"labels must be a mapping or None, got {type(labels).__name__}")
    return {
        "ops": ops,
        "source": source,
        "reason": reason,
        "labels": labels,
        "summary": summary,
        "valid_time": valid_time,
    }


def prepare_write(index: int, write: Any) -> dict[str, Any]:
    """Validate one write (a mapping of ``commit()`` arguments or a ``Write``)."""
    data = write.model_dump() if hasattr(write, "model_dump") else write
    if not isinstance(data, Mapping):
        raise InvalidOpError(f"writes[{index}] must be a mapping of commit() arguments")
    unknown = set(data) - _WRITE_KEYS
    if unknown:
        raise InvalidOpError(f"writes[{index}] has unknown keys {sorted(unknown)}")
    for key in ("source", "reason"):
        if not isinstance(data.get(key), str):
            raise InvalidOpError(f"writes[{index}].{key} must be a string")
    for key in ("summary", "valid_time"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise InvalidOpError(f"writes[{index}].{key} must be a string or None")
    for key in ("source", "reason", "summary", "valid_time"):
        if "\x00" in (data.get(key) or ""):
            raise InvalidOpError(
                f"writes[{index}].{key} must not contain NUL characters (\\x00): {val.NUL_REASON}"
            )
    labels = data.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise InvalidOpError(f"writes[{index}].labels must be a mapping")
    return {
        "ops": normalise_ops(data.get("ops") or []),
        "source": data["source"],
        "reason": data["reason"],
        "labels": dict(labels),
        "summary": data.get("summary"),
        "valid_time": data.get("valid_time"),
    }


def commit_writes(
    db: Backend,
    app: str,
    user: str,
    scope: Scope | None | Callable[[], Scope | None],
    writes: Sequence[Any],
    encoder: StoreEncoder,
    reranker: Any = None,
    on_commit: OnCommit | None = None,
) -> list[int]:
    """Commit ``writes`` to the scope (app, user), one version each; returns their ids.

    ``scope`` is the scope's row read before (None: the scope does not exist yet), or
    a function reading it, called only when a delete must be described (saving a
    round trip on a server for writes without one); it only serves to describe
    deletes before embedding, every transaction re-reads its state. Texts a ``redact`` op erased are forgotten from the embedding caches of
    ``encoder`` and ``reranker``.
    """
    if isinstance(writes, (str, bytes, Mapping)) or not isinstance(writes, Sequence):
        raise TypeError(f"writes must be a list of writes, got {type(writes).__name__}")
    if on_commit is not None and not callable(on_commit):
        raise TypeError("on_commit must be callable(conn, scope_id, version_id) or None")
    prepared = [prepare_write(i, w) for i, w in enumerate(writes)]
    if not prepared:
        return []
    overlay: dict[str, str | None] = {}

    found: list[Scope | None] = [] if callable(scope) else [scope]

    def lookup(item: str) -> str | None:
        if item in overlay:
            return overlay[item]
        if not found:
            found.append(scope())  # type: ignore[operator]
        if found[0] is None:
            return None
        with db.lock:
            return open_text(db, found[0].scope_id, item)

    dense_texts = []
    consulted: list[dict[str, str | None]] = []  # per write: the texts its descriptor quotes
    for p in prepared:
        seen: dict[str, str | None] = {}

        def quoted(item: str, seen: dict[str, str | None] = seen) -> str | None:
            seen[item] = lookup(item)
            return seen[item]

        dense_texts.append(describe(p["ops"], p["summary"], p["labels"], quoted)[0])
        consulted.append(seen)
        for o in p["ops"]:
            overlay[o.item_id] = None if o.op in ("delete", "redact") else o.text
    vectors = encoder.embed_many(dense_texts)
    out: list[int] = []
    for start in range(0, len(prepared), BATCH_TXN):
        chunk = range(start, min(start + BATCH_TXN, len(prepared)))
        redacts = any(o.op == "redact" for i in chunk for o in prepared[i]["ops"])
        erased: list[str] = []
        fast = getattr(db, "commit_fast", None)  # a backend's few-round-trip path
        if fast is not None and on_commit is None and not redacts:
            got = fast(
                app, user, [prepared[i] for i in chunk], [dense_texts[i] for i in chunk],
                [vectors[i] for i in chunk], encoder, describe,
                consulted=[consulted[i] for i in chunk],
            )  # fmt: skip
            if got is not None:
                out.extend(got)
                continue
        with db.lock, erasure.erasing(db, redacts), db.transaction() as conn:
            sid = ensure_scope(db, app, user)
            for i in chunk:
                out.append(
                    _apply(db, sid, prepared[i], dense_texts[i], vectors[i], encoder, erased)
                )
                if on_commit is not None:
                    on_commit(conn, sid, out[-1])
        if erased:
            erasure.forget(erased, encoder, reranker)
    return out


def _apply(
    db: Backend,
    sid: int,
    p: dict[str, Any],
    dense_pre: str,
    vecs: np.ndarray,
    encoder: StoreEncoder,
    erased: list[str],
) -> int:
    dense, lexical = describe(
        p["ops"], p["summary"], p["labels"], lambda item: open_text(db, sid, item)
    )
    if dense != dense_pre:  # another writer changed a deleted item meanwhile: re-embed
        vecs = encoder.embed(dense)

    def redact_item(item_id: str) -> None:
        erased.extend(
            erasure.redact_op(
                db, sid, item_id, reason=p["reason"], source=p["source"], encoder=encoder
            )
        )

    return apply_commit(
        db,
        sid,
        p["ops"],
        source=p["source"],
        reason=p["reason"],
        labels=p["labels"],
        summary=p["summary"],
        valid_time=p["valid_time"],
        dense_text=dense,
        lexical_text=lexical,
        vectors=vecs,
        redact_item=redact_item,
    )


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
        try:
            val.id_size(item_id, f"ops[{i}].item_id")
        except ValueError as exc:  # the store's op error (a ValueError too)
            raise InvalidOpError(str(exc)) from None
        if op in ("add", "update", "consolidate") and not isinstance(text, str):
            raise InvalidOpError(f"ops[{i}] ({op} {item_id!r}) needs a text string")
        if text is not None and not isinstance(text, str):
            raise InvalidOpError(f"ops[{i}].text must be a string or None")
        for field, value in (("item_id", item_id), ("text", text)):
            if isinstance(value, str) and "\x00" in value:
                raise InvalidOpError(
                    f"ops[{i}].{field} must not contain NUL characters (\\x00): {val.NUL_REASON}"
                )
        out.append(NormalOp(op, item_id, text, meta))
    if not out:
        raise InvalidOpError("a commit needs at least one op")
    return out


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


def ensure_scope(db: Backend, app: str, user: str) -> int:
    """Scope id of (app, user), creating it with its empty root version v_0; inside the
    caller's write transaction, which then holds the scope's write lock."""
    find = 'SELECT scope_id FROM scopes WHERE app = ? AND "user" = ?'
    got = db.conn.execute(find, (app, user)).fetchone()
    if got:
        db.lock_scope(int(got[0]))
        return int(got[0])
    # Another process may create the same scope at the same time (a server backend):
    # the loser's insert waits for the winner's commit and inserts nothing; both then
    # lock the one row, and only the creator finds no root version yet.
    db.conn.execute(
        'INSERT INTO scopes (app, "user") VALUES (?, ?) ON CONFLICT DO NOTHING', (app, user)
    )
    sid = int(db.conn.execute(find, (app, user)).fetchone()[0])
    db.lock_scope(sid)
    if db.conn.execute("SELECT 1 FROM versions WHERE scope_id = ? AND seq = 0", (sid,)).fetchone():
        return sid
    db.conn.execute(
        "INSERT INTO versions (scope_id, version_id, seq, parent, op, created, descriptor) "
        "VALUES (?, 0, 0, NULL, 'root', ?, '')",
        (sid, time.time()),
    )
    return sid


def _revert_text(db: Backend, scope_id: int, o: NormalOp) -> str | None:
    """Text an item-level ``revert`` op restores (meta ``to_version``, else previous value)."""
    conn = db.conn
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
    db: Backend,
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
    conn = db.conn
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
            text = o.text if o.text is not None else _revert_text(db, scope_id, o)
        else:
            text = o.text
        if o.op == "consolidate":
            for other in o.meta.get("replaces", []) or []:
                set_item(db, scope_id, str(other), None, seq)
        set_item(db, scope_id, o.item_id, text, seq)
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
    vrow = db.insert(
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
        "vrow",
    )
    db.index_descriptor(scope_id, vrow, lexical_text)
    db.put_vectors(vrow, vectors)
    conn.execute(
        "UPDATE scopes SET head_vid = ?, head_seq = ?, next_vid = ?, next_seq = ?, gen = gen + 1 "
        "WHERE scope_id = ?",
        (vid, seq, vid + 1, seq + 1, scope_id),
    )
    return int(vid)
