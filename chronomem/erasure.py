"""Erasure: redaction (content disappears from every table and index) and compaction.

Redaction (:meth:`ChronoMem.redact`; a commit's ``redact`` op is its by-id mode):

- by id: every content item ``x`` ever held is erased: its spans (current, past and
  discarded history), its item-index rows, its events' content hashes, and its blobs
  unless another item holds the very same text (that item is not redacted). The id
  itself is never used as a search string, so unrelated text containing it is intact.
- by text: every stored content containing the text is erased, whatever item holds it.

Then the erased texts (and, by text, the text itself) become ``[redacted]`` wherever
free text can quote them: descriptors (re-indexed and re-embedded), summaries,
reasons and sources (NL requests are stored there), labels, op metadata and answers.
All in one write transaction under the backend's ``secure_delete`` and then its
``purge`` (SQLite: FTS segment merge, WAL checkpoint), so deleted bytes are zeroed in
the file, not just unlinked; last, the vectors of every text embedded from the erased
content (:func:`stale_texts`) leave the embedding caches, in memory and on disk.
Audit metadata stays. :func:`compact` deletes the history truncates discarded, under
the same ``secure_delete`` and ``purge`` (it and :func:`erasing` live in
:mod:`chronomem.compaction`, re-exported here).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from chronomem.backend import Backend
from chronomem.compaction import compact as compact  # re-exported: the store's
from chronomem.compaction import discard_hidden as discard_hidden  # re-exported
from chronomem.compaction import erasing as erasing  # re-exported: commit's
from chronomem.embedders import shared_cache
from chronomem.encoder import StoreEncoder
from chronomem.itemindex import text_tokens
from chronomem.query import content_query
from chronomem.reads import find_scope, locked_scope
from chronomem.rerank import delta_lines, forget_descriptor_terms
from chronomem.types import REDACTED


def forget(texts: Iterable[str], encoder: StoreEncoder, reranker: Any = None) -> None:
    """Drop the vectors of ``texts`` from the embedding caches (memory and disk) of the
    store's embedder and of a reranker that embeds with a model of its own, every
    memoised item token (:class:`~chronomem.itemindex.TextTokens`) and the
    reranker's memoised descriptor token sets."""
    texts = list(texts)
    embedders = [encoder.embedder]
    other = getattr(reranker, "embedder", None)
    if other is not None and other is not encoder.embedder:
        embedders.append(other)
    for embedder in embedders:
        shared_cache(embedder).forget(texts)
    text_tokens().forget()  # the item index's memo: every text and token goes
    forget_descriptor_terms()  # the reranker's descriptor token sets, likewise


def item_known(db: Backend, scope_id: int, item_id: str) -> bool:
    """True when ``item_id`` has a span or an event in the scope (any history)."""
    for table in ("spans", "events"):
        row = db.conn.execute(
            f"SELECT 1 FROM {table} WHERE scope_id = ? AND item_id = ? LIMIT 1", (scope_id, item_id)
        ).fetchone()
        if row:
            return True
    return False


def redact(
    db: Backend,
    app: str,
    user: str,
    target: str,
    by: str,
    reason: str,
    source: str,
    encoder: StoreEncoder,
    reranker: Any = None,
) -> dict:
    """:meth:`ChronoMem.redact`: erase ``target`` from the scope; returns the report.
    ``reranker``: its own embedder's cache forgets the stale texts too."""
    empty = {"by": by, "items": [], "versions": [], "contents": 0, "descriptors": 0}
    if find_scope(db, app, user) is None:  # a scope that does not exist is not created
        return {**empty, "answers": 0, "wal_checkpointed": True}
    with db.lock, db.secure_delete():
        with db.transaction():
            sc = locked_scope(db, app, user)
            assert sc is not None
            mode = by
            if by == "auto":
                mode = "id" if item_known(db, sc.scope_id, target) else "text"
            elif by == "id" and not item_known(db, sc.scope_id, target):
                raise ValueError(
                    f"item_or_text: no item {target!r} in this scope; pass by='text' "
                    "to erase every content containing it"
                )
            detail, texts = redact_in_txn(
                db, sc.scope_id, target, by=mode, reason=reason, source=source, encoder=encoder
            )
        # still under secure_delete: merged-away index segments are zeroed, then the WAL
        # (which holds the old pages) is checkpointed and truncated.
        detail["wal_checkpointed"] = db.purge()
    forget([*texts, target], encoder, reranker)
    return detail


def redact_op(
    db: Backend, scope_id: int, item_id: str, *, reason: str, source: str, encoder: StoreEncoder
) -> list[str]:
    """A commit's ``redact`` op (inside its transaction, under :func:`erasing`): erase
    ``item_id`` by id if the scope ever held it; returns the stale texts to forget."""
    if not item_known(db, scope_id, item_id):
        return []
    _, texts = redact_in_txn(
        db, scope_id, item_id, by="id", reason=reason, source=source, encoder=encoder
    )
    return texts


def scrubbed_reason(reason: str, erased: Sequence[str]) -> str:
    """``reason`` with every word that occurs in an erased text replaced by
    ``[redacted]`` (case-insensitive), and every erased text quoted whole too.

    A reason is free text a caller writes (often the user's request: "forget my door code
    1234"); stored as given it would keep the very words redaction erases. Words shared
    with the erased texts go even when they are harmless ("forget", "my"): over-redacting
    a reason costs a less readable log, under-redacting keeps a secret.
    """
    out = reason
    for text in sorted(erased, key=len, reverse=True):
        if text:
            out = out.replace(text, REDACTED)
    words = {w.casefold() for text in erased for w in _WORDS.findall(text)}
    if not words:
        return out
    return _WORDS.sub(lambda m: REDACTED if m.group(0).casefold() in words else m.group(0), out)


_WORDS = re.compile(r"\w+")


def redact_in_txn(
    db: Backend,
    scope_id: int,
    target: str,
    *,
    by: str,
    reason: str,
    source: str,
    encoder: StoreEncoder,
) -> tuple[dict, list[str]]:
    """Erase ``target`` (an item id when ``by == "id"``, else a text).

    Returns (report, stale texts). The report names every item and version touched
    and holds no erased text; it is also the audit row's detail. The stale texts
    (:func:`stale_texts`) are for :func:`forget` after the commit, so no vector (nor its
    sha256 key, a guessable fingerprint) of a text quoting the content stays.
    """
    conn = db.conn
    if by == "id":
        hashes = conn.execute(
            "SELECT hash FROM spans WHERE scope_id = ? AND item_id = ? UNION "
            "SELECT hash FROM events WHERE scope_id = ? AND item_id = ? AND hash IS NOT NULL",
            (scope_id, target, scope_id, target),
        ).fetchall()
    else:
        hashes = conn.execute(
            f"SELECT hash FROM blobs WHERE scope_id = ? AND {db.contains('text')}",
            (scope_id, target),
        ).fetchall()
    hashes = [r[0] for r in hashes]
    marks = ",".join("?" * len(hashes)) or "NULL"  # IN (NULL): no match; IN () is SQLite-only
    if by == "id":
        items, span_cond, span_args = [target], "item_id = ? AND ", [target]
    else:
        rows = conn.execute(
            f"SELECT item_id FROM spans WHERE scope_id = ? AND hash IN ({marks}) "
            f"UNION SELECT item_id FROM events WHERE scope_id = ? AND hash IN ({marks})",
            (scope_id, *hashes, scope_id, *hashes),
        )
        items, span_cond, span_args = sorted({r[0] for r in rows}), "", []
    texts = [
        r[0]
        for r in conn.execute(
            f"SELECT text FROM blobs WHERE scope_id = ? AND hash IN ({marks})",
            (scope_id, *hashes),
        )
    ]
    versions: set[int] = {
        r[0]
        for r in conn.execute(
            f"SELECT version_id FROM events WHERE scope_id = ? AND {span_cond}hash IN ({marks})",
            (scope_id, *span_args, *hashes),
        )
    }
    for h in hashes:
        cond = f"scope_id = ? AND {span_cond}hash = ?"
        args = (scope_id, *span_args, h)
        db.unindex_items(
            [r[0] for r in conn.execute(f"SELECT span_id FROM spans WHERE {cond}", args)]
        )
        conn.execute(f"DELETE FROM spans WHERE {cond}", args)
        conn.execute(f"UPDATE events SET hash = NULL, redacted = 1 WHERE {cond}", args)
        # An answer that relied on the content keeps a marker, not the content's hash
        # (a hash of a short secret can be confirmed by guessing); it stays flagged.
        conn.execute(
            "UPDATE answer_items SET hash = 'redacted' WHERE hash = ? AND answer_id IN "
            f"(SELECT answer_id FROM answers WHERE scope_id = ?){' AND item_id = ?' if span_args else ''}",
            (h, scope_id, *span_args),
        )
        conn.execute(
            "DELETE FROM blobs WHERE scope_id = ? AND hash = ? AND NOT EXISTS "
            "(SELECT 1 FROM spans WHERE scope_id = ? AND hash = ?)",
            (scope_id, h, scope_id, h),
        )
    needles = sorted({*texts, *([target] if by == "text" else [])}, key=len, reverse=True)
    needles = [n for n in needles if n]
    scrubbed, old_descriptors = _scrub_descriptors(db, scope_id, needles, encoder)
    versions.update(scrubbed)
    free_touched, old_free_text = _scrub_free_text(db, scope_id, needles)
    versions.update(free_touched)
    answers = 0
    for needle in needles:
        answers += conn.execute(
            f"UPDATE answers SET text = replace(text, ?, ?) WHERE scope_id = ? AND {db.contains('text')}",
            (needle, REDACTED, scope_id, needle),
        ).rowcount
    conn.execute("UPDATE scopes SET gen = gen + 1 WHERE scope_id = ?", (scope_id,))
    detail = {
        "by": by,
        "items": items,
        "versions": sorted(versions),
        "contents": len(hashes),
        "descriptors": len(scrubbed),
        "answers": answers,
    }
    conn.execute(
        "INSERT INTO audit (scope_id, action, detail, source, reason, recorded) "
        "VALUES (?, 'redact', ?, ?, ?, ?)",
        (scope_id, json.dumps(detail), source, reason, time.time()),
    )
    stale = stale_texts(texts, old_descriptors, old_free_text, encoder.windows)
    return detail, stale


def stale_texts(
    erased: Iterable[str],
    descriptors: Iterable[str],
    free_text: Iterable[str],
    windows: Callable[[str], Sequence[str]] | None = None,
) -> list[str]:
    """Every text the store may have embedded from erased content, deduplicated.

    A descriptor was embedded window by window at commit time and line by line by the
    delta reranker; all of its windows and lines go (not only those quoting a needle:
    a line cut on word boundaries can hold part of a multi-word needle). Forgetting a
    text that another descriptor shares only costs one re-embedding. An NL request is
    stored as the reason ``"nl: <request>"`` and was embedded as its content words.
    """
    out: dict[str, None] = dict.fromkeys(erased)
    for desc in descriptors:
        out.setdefault(desc)
        if windows is not None:
            out.update(dict.fromkeys(windows(desc)))
        for line in desc.split("\n"):
            out.update(dict.fromkeys((line, line.strip())))
        out.update(dict.fromkeys(delta_lines(desc)))
    for text in free_text:
        out.setdefault(text)
        if text.startswith("nl: "):
            request = text[4:]
            out.update(dict.fromkeys((request, content_query(request))))
    return [t for t in out if t]


def _scrub_descriptors(
    db: Backend, scope_id: int, needles: list[str], encoder: StoreEncoder
) -> tuple[set[int], list[str]]:
    """Rewrite descriptors (dense text and lexical body) quoting a needle; returns the
    version ids touched and the pre-scrub dense descriptors that were rewritten."""
    conn = db.conn
    hits: dict[int, tuple[int, str]] = {}
    for needle in needles:
        for vrow, vid, desc in conn.execute(
            "SELECT vrow, version_id, descriptor FROM versions WHERE scope_id = ? "
            f"AND {db.contains('descriptor')}",
            (scope_id, needle),
        ).fetchall():
            hits[vrow] = (vid, desc)
    bodies: dict[int, str] = {}
    for needle in needles:  # the lexical body also holds labels and item ids
        for vrow, body in db.descriptors_containing(scope_id, needle):
            bodies[vrow] = body
    touched: set[int] = set()
    for vrow in set(hits) | set(bodies):
        row = conn.execute(
            "SELECT version_id, descriptor FROM versions WHERE vrow = ?", (vrow,)
        ).fetchone()
        if row is None:
            continue
        vid, dense = row
        body = bodies.get(vrow)
        if body is None:
            indexed = db.descriptor_body(vrow)
            body = indexed if indexed is not None else dense
        for needle in needles:
            dense = dense.replace(needle, REDACTED)
            body = body.replace(needle, REDACTED)
        db.unindex_descriptors([vrow])
        db.index_descriptor(scope_id, vrow, body)
        if vrow in hits:
            conn.execute("UPDATE versions SET descriptor = ? WHERE vrow = ?", (dense, vrow))
            db.delete_vectors([vrow])
            db.put_vectors(vrow, encoder.embed(dense))
        touched.add(int(vid))
    return touched, [desc for _, desc in hits.values()]


# Free-text and JSON columns that can quote stored content (or an NL request).
_TEXT_COLUMNS = {
    "versions": ("summary", "reason", "source"),
    "events": ("reason", "source"),
    "audit": ("reason", "source"),
}
_JSON_COLUMNS = {"versions": ("labels",), "events": ("meta",), "audit": ("detail",)}


def _scrub_free_text(db: Backend, scope_id: int, needles: list[str]) -> tuple[set[int], list[str]]:
    """Replace needles in summaries, reasons, sources, labels and metadata; returns the
    ids of versions whose row (or whose events) changed, and the pre-scrub values of
    the plain-text columns that quoted a needle (a value is read before any needle
    changes it: it is first read at the first needle it contains)."""
    conn = db.conn
    touched: set[int] = set()
    originals: dict[str, None] = {}
    redacted_json = json.dumps(REDACTED)[1:-1]
    for needle in needles:
        quoted_json = json.dumps(needle)[1:-1]
        for table, texts in _TEXT_COLUMNS.items():
            (blob,) = _JSON_COLUMNS[table]
            key = "version_id" if table != "audit" else "audit_id"
            # One scan of the table per needle for all its columns (a scan per column
            # was 1-2.5 ms each at 10,000 versions, eleven of them per needle): read the
            # rows quoting the needle anywhere, then rewrite just those rows by key.
            anywhere = " OR ".join(db.contains(c) for c in (*texts, blob))
            args = (scope_id, *[needle] * len(texts), quoted_json)
            rows = conn.execute(
                f"SELECT {key}, {', '.join(texts)} FROM {table} "
                f"WHERE scope_id = ? AND ({anywhere})",
                args,
            ).fetchall()
            if not rows:
                continue  # the scope is locked: no row of it quotes the needle
            for r in rows:
                originals.update(dict.fromkeys(v for v in r[1:] if v is not None and needle in v))
            keys = sorted({int(r[0]) for r in rows})
            sets = ", ".join(f"{c} = replace({c}, ?, ?)" for c in (*texts, blob))
            where = f"scope_id = ? AND ({anywhere})"
            if len(keys) <= _KEYS_INLINE:  # by key: an index probe, not another scan
                where += f" AND {key} IN ({', '.join('?' * len(keys))})"
            conn.execute(
                f"UPDATE {table} SET {sets} WHERE {where}",
                (
                    *[needle, REDACTED] * len(texts), quoted_json, redacted_json, *args,
                    *(keys if len(keys) <= _KEYS_INLINE else ()),
                ),
            )  # fmt: skip
            if table != "audit":
                touched.update(keys)
    return touched, list(originals)


_KEYS_INLINE = 500  # more rows than this are rewritten by the condition alone (a scan)
