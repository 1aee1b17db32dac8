"""PostgreSQL commits in one round trip: a server-side function takes a whole commit.

Why: the pipelined path (:mod:`.fastwrite`) needs two round trips and about twenty
statements per commit, and encoding their arrays cost the client 1.9 ms of CPU per
commit; with 16 writers on a 2-core machine the clients' CPU, not the server, bounded
throughput (398 commits/s). Here the client builds one JSON document per call (the ops,
the descriptor, the tokenized postings; one ``json.dumps``) and one binary ``float4[]``
of the descriptors' vectors, and sends ``SELECT ... FROM chronomem_commit($1, $2)``
(prepared once per connection, :meth:`~.conn.PgConn.call_prepared`): one statement, in
autocommit mode, so the call is its own transaction and its reply is the commit's.

What the function does is the pipelined path's work, in the same order and with the
same rows (``tests/test_memory_pg_commitfn.py`` compares every table): lock the scope row
``FOR UPDATE`` (each later statement reads a snapshot taken after the lock, READ
COMMITTED), draw the version's and the new spans' keys from their sequences in commit
order, close the open spans of the items that change, open the new ones, index the new
texts and the descriptor, write events, version, vectors and the scope's counters. One
difference: the function leaves its documents out of the per-term document counts and
folds a scope's uncounted documents into them every ``lexical.FOLD_EVERY`` writes, in one
grouped upsert that moves the scope's mark past them (readers add the uncounted ones,
so reads stay exact; see :func:`~chronomem.pg.lexical.stats`).
Tokenizing stays in the client (FTS5's tokenizer, which the server does not have).

What the client cannot know before the lock, the function checks: a delete's
descriptor quotes the deleted item's text as the client read it, so the client sends
the hash of each text it read, and the function raises :data:`RETRY` (nothing written)
when the item's text at HEAD differs, or when the scope has no row yet. The caller then
takes the pipelined path, which reads those texts under the lock.

Durability is the server's: the function's transaction commits as every other does
(``synchronous_commit`` as set; the default flushes the WAL before the reply). A
connection lost during the call is a :class:`~.conn.StoreConnectionError` that says the
write may or may not have been applied, as a break during ``COMMIT`` is.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from chronomem.pg import lexical as lex
from chronomem.pg.conn import float4_array_binary
from chronomem.pg.fastwrite import ALIVE, eligible
from chronomem.sql import content_hash

RETRY = "CM001"  # SQLSTATE the function raises when a write needs another path
CALL = "SELECT vids, changed FROM chronomem_commit($1::jsonb, $2::float4[])"
CALL_NAME = "chronomem_commit"  # the call's prepared-statement name on each connection


def _fold(ix: lex.Index) -> str:
    """PL/pgSQL folding the scope's uncounted documents of ``ix`` into its counts."""
    return lex.fold_sql(ix, "v_sid") + ";"


def _regclass(name: str) -> str:
    """An SQL literal naming relation ``name`` (unqualified) as a ``regclass``."""
    quoted = '"' + name.replace('"', '""') + '"'
    return "'" + quoted.replace("'", "''") + "'::regclass"


def function_sql(span_seq: str = "spans_span_id_seq", vrow_seq: str = "versions_vrow_seq") -> str:
    """``CREATE OR REPLACE FUNCTION chronomem_commit(jsonb)`` in the current schema
    (tables resolve through the caller's ``search_path``: the store's schema).
    ``span_seq``/``vrow_seq``: the key sequences of ``spans.span_id`` and
    ``versions.vrow`` (unqualified names, found by :func:`install`). They are written
    into the function as constants: looking them up in every call
    (``pg_get_serial_sequence``) was about 2% of the server's CPU per commit."""
    items, descs = lex.ITEMS, lex.DESCRIPTORS
    ops = (
        "jsonb_to_recordset(w->'ops') AS o(n int, op text, item text, nh text, t text, "
        "meta text, len int, x boolean, xh text, tm text[])"
    )
    return f"""
CREATE OR REPLACE FUNCTION chronomem_commit(p jsonb, vecs float4[],
                                            OUT vids bigint[], OUT changed bigint)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
    w jsonb;
    v_sid bigint; v_head bigint; v_seq bigint; v_vid bigint; v_vrow bigint;
    open_n int[]; open_ids bigint[]; close_ids bigint[];
    stale boolean; n_ops int; n_open int; n_close int; i_tok bigint;
    i_rows bigint; d_rows bigint; v_rows bigint; v_uncounted int;
BEGIN
    vids := '{{}}';
    changed := 0;
    FOR w IN SELECT e.value FROM jsonb_array_elements(p->'writes') WITH ORDINALITY
             AS e(value, k) ORDER BY e.k LOOP
        SELECT s.scope_id, s.head_vid, s.next_seq, s.next_vid, s.uncounted
          INTO v_sid, v_head, v_seq, v_vid, v_uncounted
          FROM scopes s WHERE s.app = p->>'app' AND s."user" = p->>'user' FOR UPDATE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'chronomem: the scope has no row yet' USING ERRCODE = '{RETRY}';
        END IF;
        v_vrow := nextval({_regclass(vrow_seq)});
        -- each op against its item's span at HEAD (one at most)
        SELECT array_agg(o.n ORDER BY o.n) FILTER (
                   WHERE o.nh IS NOT NULL AND c.hash IS DISTINCT FROM o.nh),
               array_agg(c.span_id ORDER BY o.n) FILTER (
                   WHERE c.span_id IS NOT NULL AND c.hash IS DISTINCT FROM o.nh),
               coalesce(bool_or((o.x AND c.hash IS DISTINCT FROM o.xh)
                   OR (c.from_seq >= v_seq AND c.hash IS DISTINCT FROM o.nh)), FALSE),
               count(*),
               coalesce(sum(o.len) FILTER (
                   WHERE o.nh IS NOT NULL AND c.hash IS DISTINCT FROM o.nh), 0)
          INTO open_n, close_ids, stale, n_ops, i_tok
          FROM {ops}
          LEFT JOIN LATERAL (SELECT s.span_id, s.hash, s.from_seq FROM spans s
                             WHERE s.scope_id = v_sid AND s.item_id = o.item AND {ALIVE}
                             LIMIT 1) c ON TRUE;
        IF stale THEN
            -- a text the descriptor quotes changed since the client read it
            RAISE EXCEPTION 'chronomem: a described item changed' USING ERRCODE = '{RETRY}';
        END IF;
        open_n := coalesce(open_n, '{{}}');
        close_ids := coalesce(close_ids, '{{}}');
        n_open := cardinality(open_n);
        n_close := cardinality(close_ids);
        open_ids := ARRAY(SELECT nextval({_regclass(span_seq)})
                          FROM generate_series(1, n_open));
        IF n_close > 0 THEN
            UPDATE spans SET to_seq = v_seq WHERE span_id = ANY(close_ids);
        END IF;
        i_rows := 0;
        IF n_open > 0 THEN
            INSERT INTO blobs (scope_id, hash, text)
                SELECT v_sid, o.nh, o.t FROM {ops} WHERE o.n = ANY(open_n)
                ORDER BY o.n ON CONFLICT DO NOTHING;
            INSERT INTO spans (span_id, scope_id, item_id, hash, from_seq)
                SELECT m.id, v_sid, o.item, o.nh, v_seq
                FROM unnest(open_n, open_ids) AS m(n, id) JOIN {ops} ON o.n = m.n
                ORDER BY m.n;
            INSERT INTO {items.docs} (doc, scope_id, len, counted, terms)
                SELECT m.id, v_sid, o.len, FALSE, o.tm
                FROM unnest(open_n, open_ids) AS m(n, id) JOIN {ops} ON o.n = m.n
                ORDER BY m.n;
            INSERT INTO {items.terms} (scope_id, term, doc, pos)
                SELECT v_sid, x.t, m.id, x.p::int[]
                FROM ROWS FROM (jsonb_array_elements_text(w->'itn'),
                                jsonb_array_elements_text(w->'itt'),
                                jsonb_array_elements_text(w->'itp')) WITH ORDINALITY
                     AS x(n, t, p, k)
                JOIN unnest(open_n, open_ids) AS m(n, id) ON m.n = x.n::int
                ORDER BY x.k;
            GET DIAGNOSTICS i_rows = ROW_COUNT;
        END IF;
        INSERT INTO events (scope_id, version_id, op, item_id, hash, meta, source, reason,
                            recorded, valid_time)
            SELECT v_sid, v_vid, o.op, o.item, o.nh, o.meta, w->>'source', w->>'reason',
                   (w->>'now')::float8, w->>'valid_time'
            FROM {ops} ORDER BY o.n;
        INSERT INTO versions (vrow, scope_id, version_id, seq, parent, op, summary, labels,
                              source, reason, created, valid_time, descriptor)
            VALUES (v_vrow, v_sid, v_vid, v_seq, v_head, w->>'op', w->>'summary',
                    w->>'labels', w->>'source', w->>'reason', (w->>'now')::float8,
                    w->>'valid_time', w->>'dense');
        INSERT INTO {descs.docs} (doc, scope_id, len, body, counted, terms)
            VALUES (v_vrow, v_sid, (w->>'dlen')::int, w->>'lexical', FALSE,
                    ARRAY(SELECT jsonb_array_elements_text(w->'dt')));
        INSERT INTO {descs.terms} (scope_id, term, doc, pos)
            SELECT v_sid, x.t, v_vrow, x.p::int[]
            FROM ROWS FROM (jsonb_array_elements_text(w->'dt'),
                            jsonb_array_elements_text(w->'dp')) WITH ORDINALITY AS x(t, p, k)
            ORDER BY x.k;
        GET DIAGNOSTICS d_rows = ROW_COUNT;
        -- the descriptor's vectors: slices of the one binary float4[] argument
        INSERT INTO desc_vecs (vrow, chunk, vec)
            SELECT v_vrow, u.k - 1, vecs[(u.s::int + 1):(u.s::int + u.n::int)]
            FROM ROWS FROM (jsonb_array_elements_text(w->'vs'),
                            jsonb_array_elements_text(w->'vn')) WITH ORDINALITY AS u(s, n, k);
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        -- this write's documents join the uncounted ones; every FOLD_EVERY writes they
        -- are folded into the document counts together
        v_uncounted := v_uncounted + 1;
        IF v_uncounted >= {lex.FOLD_EVERY} THEN
            {_fold(items)}
            {_fold(descs)}
            v_uncounted := 0;
        END IF;
        UPDATE scopes SET head_vid = v_vid, head_seq = v_seq, next_vid = v_vid + 1,
               next_seq = v_seq + 1, gen = gen + 1, uncounted = v_uncounted,
               {items.n_col} = {items.n_col} + n_open,
               {items.tok_col} = {items.tok_col} + i_tok,
               {descs.n_col} = {descs.n_col} + 1,
               {descs.tok_col} = {descs.tok_col} + (w->>'dlen')::int
         WHERE scope_id = v_sid;
        vids := vids || v_vid;
        -- rows written, counted as the pipelined path counts them
        changed := changed + n_close + 2 * n_open + i_rows + n_ops + 1 + d_rows + 2 + v_rows;
    END LOOP;
END
$fn$
"""


def install(conn: Any) -> None:
    """Create (or replace) the commit function in the connection's current schema (its
    tables exist)."""
    spans, versions = conn.execute(
        "SELECT (SELECT relname FROM pg_class WHERE oid = "
        "pg_get_serial_sequence('spans', 'span_id')::regclass), "
        "(SELECT relname FROM pg_class WHERE oid = "
        "pg_get_serial_sequence('versions', 'vrow')::regclass)"
    ).fetchone()
    conn.execute(function_sql(spans, versions))


def _pos(positions: Sequence[int]) -> str:
    # the tokenizer's positions are ints already: map(str) is about twice as fast as a
    # generator calling int() on each, and payload() runs it for every term of a commit
    return "{" + ",".join(map(str, positions)) + "}"


def _key(term: str) -> str:
    # lex.term_key without a call for the common short token (same result: a token
    # of at most MAX_TERM_BYTES / 4 characters fits in MAX_TERM_BYTES bytes)
    return term if len(term) * 4 <= lex.MAX_TERM_BYTES else lex.term_key(term)


def _meta(meta: Any) -> str:
    return "{}" if type(meta) is dict and not meta else json.dumps(meta, default=str)


def payload(
    app: str,
    user: str,
    prepared: Sequence[Mapping[str, Any]],
    vectors: Sequence[np.ndarray],
    consulted: Sequence[Mapping[str, str | None]],
    described: Sequence[tuple[str, str]],
) -> tuple[str, bytes]:
    """The two arguments :func:`function_sql`'s function takes for these writes: a JSON
    document and every descriptor vector in one ``float4[]`` (binary; each write's JSON
    says where its vectors start and how long they are). ``consulted`` holds, per
    write, the texts its descriptor quoted (item -> text or None, as read before the
    lock), ``described`` its (dense, lexical) descriptor.

    Why the vectors travel apart: as ``float4[]`` text literals in the JSON (a
    ``repr`` per value, parsed again by the server) they were about a sixth of the
    client's own code per commit with the 64-value hash vectors, and grow with the
    embedder's dimension; binary, they are copied as they are."""
    texts: list[str] = []
    for p, (_, lexical) in zip(prepared, described, strict=True):
        texts.extend(o.text for o in p["ops"] if o.op != "delete")
        texts.append(lexical)
    posted = iter(lex.tokenizer().postings(texts))
    now = time.time()
    writes = []
    flat: list[np.ndarray] = []
    at = 0
    for p, (dense, lexical), vecs, seen in zip(
        prepared, described, vectors, consulted, strict=True
    ):
        ops, rows = p["ops"], []
        itn: list[int] = []
        itt: list[str] = []
        itp: list[str] = []
        for n, o in enumerate(ops):
            text = None if o.op == "delete" else o.text
            length = 0
            held: list[str] = []
            if text is not None:
                terms, length = next(posted)
                held = [_key(term) for term in terms]
                itn.extend([n] * len(held))
                itt.extend(held)
                itp.extend([_pos(pos) for pos in terms.values()])
            looked = o.item_id in seen
            quoted = seen.get(o.item_id)
            rows.append(
                {
                    "n": n, "op": o.op, "item": o.item_id,
                    "nh": content_hash(text) if text is not None else None, "t": text,
                    "meta": _meta(o.meta), "len": length, "x": looked,
                    "xh": content_hash(quoted) if quoted is not None else None, "tm": held,
                }
            )  # fmt: skip
        dterms, dlen = next(posted)
        chunks = [np.asarray(v, np.float32).ravel() for v in vecs]
        starts, lengths = [], []
        for c in chunks:
            starts.append(at)
            lengths.append(len(c))
            at += len(c)
        flat.extend(chunks)
        writes.append(
            {
                "ops": rows, "itn": itn, "itt": itt, "itp": itp,
                "dt": [_key(t) for t in dterms], "dp": [_pos(v) for v in dterms.values()],
                "dlen": dlen, "lexical": lexical, "dense": dense,
                "op": ops[0].op if len({o.op for o in ops}) == 1 else "mixed",
                "summary": p["summary"], "labels": json.dumps(dict(p["labels"]), default=str),
                "source": p["source"], "reason": p["reason"], "valid_time": p["valid_time"],
                "now": now, "vs": starts, "vn": lengths,
            }
        )  # fmt: skip
    values = np.concatenate(flat) if flat else np.zeros(0, np.float32)
    return json.dumps({"app": app, "user": user, "writes": writes}), float4_array_binary(values)


def commit_writes(
    backend: Any,
    app: str,
    user: str,
    prepared: Sequence[Mapping[str, Any]],
    dense_pre: Sequence[str],
    vectors: Sequence[np.ndarray],
    consulted: Sequence[Mapping[str, str | None]],
    describe: Callable[..., tuple[str, str]],
) -> list[int] | None:
    """Commit ``prepared`` writes in one call of the server function (one round trip,
    one transaction); their version ids, or None with nothing written when a write
    needs another path (an op other than add/update/delete, an item twice, a new
    scope, a quoted text that changed)."""
    import psycopg

    if not all(eligible(p) for p in prepared):
        return None
    described = [
        describe(p["ops"], p["summary"], p["labels"], seen.get)
        for p, seen in zip(prepared, consulted, strict=True)
    ]
    if any(d[0] != dense for d, dense in zip(described, dense_pre, strict=True)):
        return None  # the texts the caller described with are not all known here
    doc, vecs = payload(app, user, prepared, vectors, consulted, described)
    with backend.lock:
        conn = backend.conn
        if conn.in_txn or conn.in_read:  # inside another transaction: not its own
            return None
        try:
            with conn.driver_errors(committing=True):
                vids, changed = conn.call_prepared(CALL_NAME, CALL, (doc, vecs))
        except psycopg.Error as exc:
            if exc.sqlstate == RETRY:
                return None
            err = conn.translate_error(exc, committing=True)
            if err is exc:
                raise
            raise err from exc
        conn.total_changes += int(changed)
    # the reply in the server's text form: '{12,13}' and '57'
    return [int(v) for v in vids.decode()[1:-1].split(",") if v]
