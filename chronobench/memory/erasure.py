"""Redaction (erasure): content disappears from every table and index; audit metadata stays.

Two modes (see :meth:`ChronoMem.redact`):

- by id: every content item ``x`` ever held is erased: its spans (current, past and
  discarded history), its item-index rows, its events' content hashes, and its blobs
  unless another item holds the very same text (that item is not redacted). The id
  itself is never used as a search string, so unrelated text containing it is intact.
- by text: every stored content containing the text is erased, whatever item holds it.

In both modes the erased texts (and, by text, the text itself) are then replaced by
``[redacted]`` wherever free text can quote them: commit descriptors (re-indexed in
FTS and re-embedded), summaries, reasons and sources of versions/events/audit rows
(NL rollback requests are stored there), labels and op metadata, and recorded
answers. The caller runs this inside one write transaction under
:func:`secure_delete` and then :func:`optimise_indexes` (FTS segment merge and a
WAL checkpoint), so deleted bytes are zeroed in the database file, not just unlinked.
Last, it forgets the vectors of every text embedded from the erased content (see
:func:`stale_texts`) from the embedding caches, in memory and on disk.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from chronobench.memory.commit import REDACTED, scope_tag
from chronobench.memory.query import content_query
from chronobench.memory.rerank import delta_lines


@contextmanager
def secure_delete(conn: sqlite3.Connection) -> Iterator[None]:
    """``PRAGMA secure_delete = ON`` for the block, then the prior value restored."""
    prior = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {prior}")


def item_known(conn: sqlite3.Connection, scope_id: int, item_id: str) -> bool:
    """True when ``item_id`` has a span or an event in the scope (any history)."""
    for table in ("spans", "events"):
        row = conn.execute(
            f"SELECT 1 FROM {table} WHERE scope_id = ? AND item_id = ? LIMIT 1", (scope_id, item_id)
        ).fetchone()
        if row:
            return True
    return False


def _in(values: list) -> str:
    return ",".join("?" * len(values))


def redact_in_txn(
    conn: sqlite3.Connection,
    scope_id: int,
    target: str,
    *,
    by: str,
    reason: str,
    source: str,
    embed: Callable[[str], np.ndarray],
    windows: Callable[[str], Sequence[str]] | None = None,
) -> tuple[dict, list[str]]:
    """Erase ``target`` (an item id when ``by == "id"``, else a text).

    Returns (report, stale texts). The report names every item and version touched
    and holds no erased text; it is also stored as the audit row's detail. The stale
    texts are every text whose embedding was derived from erased content: the erased
    texts, and the pre-scrub descriptors with their dense windows (``windows``: the
    store's windowing, see ``StoreCore._windows``), lines and reranker delta lines,
    and the pre-scrub summaries/reasons/sources with the NL requests they record.
    The caller passes them to ``EmbeddingCache.forget`` after the commit, so no vector
    (nor its sha256 key, a guessable fingerprint) of a text quoting the content stays.
    """
    if by == "id":
        hashes = [
            r[0]
            for r in conn.execute(
                "SELECT hash FROM spans WHERE scope_id = ? AND item_id = ? UNION "
                "SELECT hash FROM events WHERE scope_id = ? AND item_id = ? AND hash IS NOT NULL",
                (scope_id, target, scope_id, target),
            )
        ]
        items = [target]
        span_cond, span_args = "item_id = ? AND ", [target]
    else:
        hashes = [
            r[0]
            for r in conn.execute(
                "SELECT hash FROM blobs WHERE scope_id = ? AND instr(text, ?) > 0",
                (scope_id, target),
            )
        ]
        items = sorted(
            {
                r[0]
                for r in conn.execute(
                    f"SELECT item_id FROM spans WHERE scope_id = ? AND hash IN ({_in(hashes)}) "
                    f"UNION SELECT item_id FROM events WHERE scope_id = ? AND hash IN ({_in(hashes)})",
                    (scope_id, *hashes, scope_id, *hashes),
                )
            }
        )
        span_cond, span_args = "", []
    texts = [
        r[0]
        for r in conn.execute(
            f"SELECT text FROM blobs WHERE scope_id = ? AND hash IN ({_in(hashes)})",
            (scope_id, *hashes),
        )
    ]
    versions: set[int] = {
        r[0]
        for r in conn.execute(
            f"SELECT version_id FROM events WHERE scope_id = ? AND {span_cond}hash IN ({_in(hashes)})",
            (scope_id, *span_args, *hashes),
        )
    }
    for h in hashes:
        cond = f"scope_id = ? AND {span_cond}hash = ?"
        args = (scope_id, *span_args, h)
        conn.execute(
            f"DELETE FROM item_fts WHERE rowid IN (SELECT span_id FROM spans WHERE {cond})", args
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
    scrubbed, old_descriptors = _scrub_descriptors(conn, scope_id, needles, embed)
    versions.update(scrubbed)
    free_touched, old_free_text = _scrub_free_text(conn, scope_id, needles)
    versions.update(free_touched)
    answers = 0
    for needle in needles:
        answers += conn.execute(
            "UPDATE answers SET text = replace(text, ?, ?) WHERE scope_id = ? AND instr(text, ?) > 0",
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
    stale = stale_texts(texts, old_descriptors, old_free_text, windows)
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
    conn: sqlite3.Connection, scope_id: int, needles: list[str], embed: Callable[[str], np.ndarray]
) -> tuple[set[int], list[str]]:
    """Rewrite descriptors (dense text and FTS body) quoting a needle; returns the
    version ids touched and the pre-scrub dense descriptors that were rewritten."""
    tag = scope_tag(scope_id)
    hits: dict[int, tuple[int, str]] = {}
    for needle in needles:
        for vrow, vid, desc in conn.execute(
            "SELECT vrow, version_id, descriptor FROM versions WHERE scope_id = ? "
            "AND instr(descriptor, ?) > 0",
            (scope_id, needle),
        ).fetchall():
            hits[vrow] = (vid, desc)
    bodies: dict[int, str] = {}
    for needle in needles:  # the lexical body also holds labels and item ids
        for vrow, body in conn.execute(
            "SELECT rowid, body FROM desc_fts WHERE desc_fts MATCH ? AND instr(body, ?) > 0",
            (f'tag : "{tag}"', needle),
        ).fetchall():
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
            got = conn.execute("SELECT body FROM desc_fts WHERE rowid = ?", (vrow,)).fetchone()
            body = got[0] if got else dense
        for needle in needles:
            dense = dense.replace(needle, REDACTED)
            body = body.replace(needle, REDACTED)
        conn.execute("DELETE FROM desc_fts WHERE rowid = ?", (vrow,))
        conn.execute("INSERT INTO desc_fts (rowid, tag, body) VALUES (?, ?, ?)", (vrow, tag, body))
        if vrow in hits:
            conn.execute("UPDATE versions SET descriptor = ? WHERE vrow = ?", (dense, vrow))
            conn.execute("DELETE FROM desc_vecs WHERE vrow = ?", (vrow,))
            conn.executemany(
                "INSERT INTO desc_vecs (vrow, chunk, vec) VALUES (?, ?, ?)",
                [(vrow, i, v.astype(np.float32).tobytes()) for i, v in enumerate(embed(dense))],
            )
        touched.add(int(vid))
    return touched, [desc for _, desc in hits.values()]


# Free-text and JSON columns that can quote stored content (or an NL request).
_TEXT_COLUMNS = {
    "versions": ("summary", "reason", "source"),
    "events": ("reason", "source"),
    "audit": ("reason", "source"),
}
_JSON_COLUMNS = {"versions": ("labels",), "events": ("meta",), "audit": ("detail",)}


def _scrub_free_text(
    conn: sqlite3.Connection, scope_id: int, needles: list[str]
) -> tuple[set[int], list[str]]:
    """Replace needles in summaries, reasons, sources, labels and metadata; returns the
    ids of versions whose row (or whose events) changed, and the pre-scrub values of
    the plain-text columns that quoted a needle (a value is read before any needle
    changes it: it is first read at the first needle it contains)."""
    touched: set[int] = set()
    originals: dict[str, None] = {}
    redacted_json = json.dumps(REDACTED)[1:-1]
    for needle in needles:
        forms = [
            (needle, REDACTED, _TEXT_COLUMNS),
            (json.dumps(needle)[1:-1], redacted_json, _JSON_COLUMNS),
        ]
        for old, new, columns in forms:
            for table, cols in columns.items():
                key = "version_id" if table != "audit" else "audit_id"
                for col in cols:
                    if columns is _TEXT_COLUMNS:
                        originals.update(
                            dict.fromkeys(
                                r[0]
                                for r in conn.execute(
                                    f"SELECT {col} FROM {table} WHERE scope_id = ? "
                                    f"AND instr({col}, ?) > 0",
                                    (scope_id, old),
                                )
                            )
                        )
                    rows = conn.execute(
                        f"UPDATE {table} SET {col} = replace({col}, ?, ?) "
                        f"WHERE scope_id = ? AND instr({col}, ?) > 0 RETURNING {key}",
                        (old, new, scope_id, old),
                    ).fetchall()
                    if table != "audit":
                        touched.update(int(r[0]) for r in rows)
    return touched, list(originals)


def optimise_indexes(conn: sqlite3.Connection) -> bool:
    """Merge FTS segments so deleted tokens leave the index b-trees, then checkpoint the
    WAL and truncate it; returns False if another connection kept the checkpoint from
    completing (the old pages then stay in the -wal file until it can)."""
    conn.execute("INSERT INTO item_fts (item_fts) VALUES ('optimize')")
    conn.execute("INSERT INTO desc_fts (desc_fts) VALUES ('optimize')")
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return not busy
