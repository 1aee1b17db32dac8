"""PostgreSQL writes in a constant number of round trips: commits and revert rollbacks.

Why: the generic write path (``chronomem.commit`` and ``.spans``)
runs one statement at a time and reads several results back (the scope row, each item's
open span, each new row's key), about 20 round trips per commit on PostgreSQL, and a
revert paid that per item it restored (81 s for 23,821 items at 10k writes).

How: psycopg's pipeline mode, which sends statements without waiting for their results;
only a fetched result waits (a sync). A commit is then two round trips: (1) ``BEGIN``,
the scope row locked ``FOR UPDATE`` with HEAD, the next seq and version id and new span
and version keys drawn from their sequences, and the open spans of the items it writes;
(2) every insert and update, set-based where rows repeat (``unnest`` of arrays), and
``COMMIT``. Durability is unchanged: the same rows, the same one transaction,
committed as the server commits (``synchronous_commit`` as it is set).

A commit first tries the server function of :mod:`.commitfn` (one round trip, far less
client CPU, since encoding these statements' arrays was most of it); this path is its
fallback, for a commit whose descriptor quotes a text another writer changed after it
was read (read again here, under the lock), and the path of revert rollbacks.

The rows written are exactly the generic path's (same tables, values and lexical
statistics), except that keys come from the sequences before the insert. Writes the
fast path does not cover (a ``redact``, ``revert`` or ``consolidate`` op, an item
written twice in one commit, a scope's first write, an ``on_commit`` hook) take the
generic path.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from chronomem.pg import lexical as lex
from chronomem.sql import content_hash

SIMPLE_OPS = ("add", "update", "delete")
SPAN_SEQ = "pg_get_serial_sequence('spans', 'span_id')"
VROW_SEQ = "pg_get_serial_sequence('versions', 'vrow')"


def hidden_filter(col: str) -> str:
    """SQL: the seq in ``col`` is not in a discarded range (the general form of
    :func:`chronomem.sql.visible`, so no extra query decides which form)."""
    return (
        f"COALESCE((SELECT h.lo FROM hidden h WHERE h.scope_id = s.scope_id AND h.hi >= {col} "
        f"ORDER BY h.hi LIMIT 1) >= {col}, TRUE)"
    )


# span s holds its item at HEAD (chronomem.sql.alive, general form)
ALIVE = f"({hidden_filter('s.from_seq')} AND (s.to_seq IS NULL OR NOT {hidden_filter('s.to_seq')}))"


def supported() -> bool:
    """Whether the installed libpq has pipeline mode (14 or later)."""
    import psycopg

    return bool(psycopg.Pipeline.is_supported())


def eligible(write: Mapping[str, Any]) -> bool:
    """Whether a prepared write takes the fast path: add/update/delete ops only, each
    item once."""
    ops = write["ops"]
    return all(o.op in SIMPLE_OPS for o in ops) and len({o.item_id for o in ops}) == len(ops)


@contextlib.contextmanager
def pipelined(backend: Any) -> Iterator[Any]:
    """The raw psycopg connection in pipeline mode inside one ``BEGIN`` ... ``COMMIT``
    (rolled back on any error; driver errors translated as the store translates them)."""
    import psycopg

    conn = backend.conn
    raw = conn.raw
    conn.in_txn = True
    try:
        try:
            with raw.pipeline():
                raw.execute("BEGIN")
                yield raw
                raw.execute("COMMIT")
        except psycopg.OperationalError as exc:
            # COMMIT is the pipeline's last statement: a break there may have applied it
            err = conn.translate_error(exc, committing=True)
            if err is exc:
                raise
            raise err from exc
    except BaseException:
        if not conn.broken():
            with contextlib.suppress(Exception):
                raw.execute("ROLLBACK")
        raise
    finally:
        conn.in_txn = False


def _pos(positions: Sequence[int]) -> str:
    """An int[] literal (positions travel as text: unnest cannot take ragged arrays)."""
    return "{" + ",".join(str(int(p)) for p in positions) + "}"


def write_items(
    raw: Any,
    scope_id: int,
    seq: int,
    current: Mapping[str, tuple[int, str, int]],
    changes: Sequence[tuple[str, str | None]],
    new_ids: Sequence[int],
) -> tuple[int, int, int]:
    """Make each ``(item, text)`` of ``changes`` hold ``text`` (None: absent) from ``seq``
    on, as :func:`chronomem.spans.set_item` does, in a fixed number of
    statements and no result read back. ``current``: each item's open span ``(span_id,
    hash, from_seq)``; ``new_ids``: keys for the spans opened, in change order.
    Returns (rows written, documents indexed, tokens indexed)."""
    close, drop, opens = [], [], []
    for item, text in changes:
        h = content_hash(text) if text is not None else None
        row = current.get(item)
        if row is not None and row[1] == h:
            continue
        if row is not None:
            (close if row[2] < seq else drop).append(row[0])
        if text is not None and h is not None:
            opens.append((item, h, text))
    rows = 0
    if close:
        raw.execute("UPDATE spans SET to_seq = %s WHERE span_id = ANY(%s)", (seq, close))
        rows += len(close)
    if drop:  # opened at this seq already: gone from the index too
        raw.execute("DELETE FROM spans WHERE span_id = ANY(%s)", (drop,))
        lex.unindex(_Raw(raw), lex.ITEMS, drop)
        rows += len(drop)
    if not opens:
        return rows, 0, 0
    ids = list(new_ids[: len(opens)])
    items = [o[0] for o in opens]
    hashes = [o[1] for o in opens]
    texts = [o[2] for o in opens]
    raw.execute(
        "INSERT INTO blobs (scope_id, hash, text) SELECT %s, h, t FROM "
        "unnest(%s::text[], %s::text[]) AS u(h, t) ON CONFLICT DO NOTHING",
        (scope_id, hashes, texts),
    )
    raw.execute(
        "INSERT INTO spans (span_id, scope_id, item_id, hash, from_seq) SELECT i, %s, it, h, %s "
        "FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS u(i, it, h)",
        (scope_id, seq, ids, items, hashes),
    )
    n_docs, n_tokens, n_rows = index_docs(
        raw, lex.ITEMS, scope_id, list(zip(ids, texts, strict=True))
    )
    return rows + len(opens) + n_rows, n_docs, n_tokens


def index_docs(
    raw: Any, ix: lex.Index, scope_id: int, docs: Sequence[tuple[int, str]]
) -> tuple[int, int]:
    """:func:`chronomem.pg.lexical.index` in two statements, without its
    statistics update (the caller folds that into its ``scopes`` update); returns
    (documents, tokens, rows written)."""
    if not docs:
        return 0, 0, 0
    posted = lex.tokenizer().postings([t for _, t in docs])
    lengths = [n for _, n in posted]
    cols = "doc, scope_id, len, terms" + (", body" if ix.body else "")
    extra = ", %s::text[]" if ix.body else ""
    # each document's terms as one text[] literal (an array of arrays would need
    # equal lengths)
    held = [lex.terms_literal(map(lex.term_key, terms)) for terms, _ in posted]
    args: list[Any] = [scope_id, [d for d, _ in docs], lengths, held]
    if ix.body:
        args.append([t for _, t in docs])
    raw.execute(
        f"INSERT INTO {ix.docs} ({cols}) SELECT d, %s, n, h::text[]{', b' if ix.body else ''} "
        f"FROM unnest(%s::bigint[], %s::int[], %s::text[]{extra}) "
        f"AS u(d, n, h{', b' if ix.body else ''})",
        args,
    )
    t_doc, t_term, t_pos = [], [], []
    for (doc, _), (terms, _) in zip(docs, posted, strict=True):
        for term, pos in terms.items():
            t_doc.append(doc)
            t_term.append(lex.term_key(term))
            t_pos.append(_pos(pos))
    if t_doc:
        raw.execute(
            f"INSERT INTO {ix.terms} (scope_id, term, doc, pos) SELECT %s, t, d, p::int[] "
            "FROM unnest(%s::text[], %s::bigint[], %s::text[]) AS u(t, d, p)",
            (scope_id, t_term, t_doc, t_pos),
        )
        terms, counts = lex.df_counts(posted)
        raw.execute(ix.df_upsert("%s"), (scope_id, terms, counts))
    return len(docs), sum(lengths), len(docs) + len(t_doc)  # df upserts not counted


class _Raw:
    """The qmark ``execute`` that :mod:`.lexical` expects, over a raw connection (so its
    statements join the pipeline without reading results)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        from chronomem.pg.conn import translate

        return self.raw.execute(translate(sql), tuple(params))

    def executemany(self, sql: str, rows: Any) -> Any:
        from chronomem.pg.conn import translate

        rows = [tuple(r) for r in rows]
        if rows:
            with self.raw.cursor() as cur:
                cur.executemany(translate(sql), rows)


def commit_writes(
    backend: Any,
    app: str,
    user: str,
    prepared: Sequence[Mapping[str, Any]],
    dense_pre: Sequence[str],
    vectors: Sequence[np.ndarray],
    encoder: Any,
    describe: Any,
) -> list[int] | None:
    """Commit ``prepared`` writes (``commit.prepare_write`` output) in one transaction:
    two round trips for one write, one more per further write. None, with nothing
    written, when a write or the scope needs the generic path."""
    if not all(eligible(p) for p in prepared):
        return None
    out: list[int] = []
    changed = 0
    try:
        with backend.lock, pipelined(backend) as raw:
            for p, pre, vecs in zip(prepared, dense_pre, vectors, strict=True):
                items = [o.item_id for o in p["ops"]]
                head = raw.execute(
                    "SELECT scope_id, head_vid, next_seq, next_vid FROM scopes "
                    'WHERE app = %s AND "user" = %s FOR UPDATE',
                    (app, user),
                )
                # Queued behind the lock, so run once it is held: keys drawn in commit
                # order (as the generic path's inserts draw them; ties rank by span id),
                # and the open spans read in a snapshot taken after the last writer's
                # commit. Not in the locking statement: its target list is computed
                # before the lock wait.
                keys = raw.execute(
                    f"SELECT nextval({VROW_SEQ}), "
                    f"ARRAY(SELECT nextval({SPAN_SEQ}) FROM generate_series(1, %s))",
                    (len(items),),
                )
                spans = raw.execute(
                    "SELECT s.item_id, s.span_id, s.hash, s.from_seq, b.text FROM spans s "
                    "JOIN blobs b ON b.scope_id = s.scope_id AND b.hash = s.hash WHERE "
                    's.scope_id = (SELECT scope_id FROM scopes WHERE app = %s AND "user" = %s) '
                    f"AND s.item_id = ANY(%s) AND {ALIVE}",
                    (app, user, items),
                )
                got = head.fetchone()  # this write's one wait
                if got is None:  # no scope row yet: the generic path creates it
                    raise _NewScope
                rows = spans.fetchall()
                current = {r[0]: (int(r[1]), r[2], int(r[3])) for r in rows}
                texts = {r[0]: r[4] for r in rows}
                head_keys = (*got, *keys.fetchone())
                changed += _write_one(
                    raw, head_keys, p, pre, vecs, encoder, describe, current, texts
                )
                out.append(int(got[3]))
    except _NewScope:
        if out:  # pragma: no cover - a scope row is never deleted
            raise RuntimeError("the scope row vanished inside a write transaction") from None
        return None
    backend.conn.total_changes += changed
    return out


class _NewScope(Exception):
    """The scope has no row yet (nothing was written)."""


def _write_one(
    raw: Any,
    head: Sequence[Any],
    p: Mapping[str, Any],
    dense_pre: str,
    vecs: np.ndarray,
    encoder: Any,
    describe: Any,
    current: Mapping[str, tuple[int, str, int]],
    texts: Mapping[str, str],
) -> int:
    """One write's statements, none read back (as ``commit.apply_commit``); returns the
    rows written."""
    sid, head_vid, seq, vid, vrow = (int(x) for x in head[:5])
    ops = p["ops"]
    dense, lexical = describe(ops, p["summary"], p["labels"], texts.get)
    if dense != dense_pre:  # another writer changed a deleted item meanwhile: re-embed
        vecs = encoder.embed(dense)
    changes = [(o.item_id, None if o.op == "delete" else o.text) for o in ops]
    rows, n_items, item_tokens = write_items(raw, sid, seq, current, changes, list(head[5]))
    now = time.time()
    raw.execute(
        "INSERT INTO events (scope_id, version_id, op, item_id, hash, meta, source, reason, "
        "recorded, valid_time) SELECT %s, %s, op, it, h, m, %s, %s, %s, %s FROM "
        "unnest(%s::text[], %s::text[], %s::text[], %s::text[]) WITH ORDINALITY "
        "AS u(op, it, h, m, o) ORDER BY o",
        (
            sid, vid, p["source"], p["reason"], now, p["valid_time"],
            [o.op for o in ops], [o.item_id for o in ops],
            [content_hash(t) if t is not None else None for _, t in changes],
            [json.dumps(o.meta, default=str) for o in ops],
        ),
    )  # fmt: skip
    op_name = ops[0].op if len({o.op for o in ops}) == 1 else "mixed"
    raw.execute(
        "INSERT INTO versions (vrow, scope_id, version_id, seq, parent, op, summary, labels, "
        "source, reason, created, valid_time, descriptor) VALUES "
        "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            vrow, sid, vid, seq, head_vid, op_name, p["summary"],
            json.dumps(dict(p["labels"]), default=str), p["source"], p["reason"], now,
            p["valid_time"], dense,
        ),
    )  # fmt: skip
    n_desc, desc_tokens, desc_rows = index_docs(raw, lex.DESCRIPTORS, sid, [(vrow, lexical)])
    put_vectors(raw, vrow, vecs)
    raw.execute(
        "UPDATE scopes SET head_vid = %s, head_seq = %s, next_vid = %s, next_seq = %s, "
        f"gen = gen + 1, {lex.ITEMS.n_col} = {lex.ITEMS.n_col} + %s, "
        f"{lex.ITEMS.tok_col} = {lex.ITEMS.tok_col} + %s, "
        f"{lex.DESCRIPTORS.n_col} = {lex.DESCRIPTORS.n_col} + %s, "
        f"{lex.DESCRIPTORS.tok_col} = {lex.DESCRIPTORS.tok_col} + %s WHERE scope_id = %s",
        (vid, seq, vid + 1, seq + 1, n_items, item_tokens, n_desc, desc_tokens, sid),
    )
    return rows + len(ops) + desc_rows + 2 + len(vecs)


def put_vectors(raw: Any, vrow: int, vectors: Sequence[np.ndarray] | np.ndarray) -> None:
    """A version's window vectors as ``desc_vecs`` rows (as the backend's
    ``put_vectors``), one statement."""
    vecs = [np.asarray(v, dtype=np.float32).astype(np.float64).tolist() for v in vectors]
    if not vecs:
        return
    # one float4[] per window: each row's text form, cast server-side
    raw.execute(
        "INSERT INTO desc_vecs (vrow, chunk, vec) SELECT %s, o - 1, v::float4[] FROM "
        "unnest(%s::text[]) WITH ORDINALITY AS u(v, o)",
        (vrow, ["{" + ",".join(repr(x) for x in v) + "}" for v in vecs]),
    )


def revert_items(
    backend: Any,
    scope_id: int,
    diff: Mapping[str, str | None],
    seq: int,
    vid: int,
    meta: str,
    reason: str,
    now: float,
) -> None:
    """A revert's item writes and events (``rollback.revert_to``'s loop over the items
    that differ), inside the caller's transaction: two result reads and a fixed number
    of set-based statements whatever the number of items."""
    if not diff:
        return
    raw = backend.conn.raw
    items = list(diff)
    changes = [(item, diff[item]) for item in items]
    pipeline = raw.pipeline() if supported() else contextlib.nullcontext()
    with backend.conn.driver_errors(), pipeline:
        spans = raw.execute(
            "SELECT s.item_id, s.span_id, s.hash, s.from_seq FROM spans s WHERE s.scope_id = %s "
            f"AND s.item_id = ANY(%s) AND {ALIVE}",
            (scope_id, items),
        )
        keys = raw.execute(
            f"SELECT ARRAY(SELECT nextval({SPAN_SEQ}) FROM generate_series(1, %s))",
            (sum(1 for _, t in changes if t is not None),),
        )
        current = {r[0]: (int(r[1]), r[2], int(r[3])) for r in spans.fetchall()}
        new_ids = list(keys.fetchone()[0])
        rows, n_docs, n_tokens = write_items(raw, scope_id, seq, current, changes, new_ids)
        raw.execute(
            "INSERT INTO events (scope_id, version_id, op, item_id, hash, meta, source, reason, "
            "recorded) SELECT %s, %s, 'revert', it, h, %s, 'chronomem', %s, %s FROM "
            "unnest(%s::text[], %s::text[]) WITH ORDINALITY AS u(it, h, o) ORDER BY o",
            (
                scope_id, vid, meta, reason, now, items,
                [content_hash(t) if t is not None else None for _, t in changes],
            ),
        )  # fmt: skip
        raw.execute(
            f"UPDATE scopes SET {lex.ITEMS.n_col} = {lex.ITEMS.n_col} + %s, "
            f"{lex.ITEMS.tok_col} = {lex.ITEMS.tok_col} + %s WHERE scope_id = %s",
            (n_docs, n_tokens, scope_id),
        )
    backend.conn.total_changes += rows + len(items) + 1
