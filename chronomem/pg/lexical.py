"""Lexical retrieval on PostgreSQL: FTS5's BM25, computed in SQL from stored term statistics.

Why not PostgreSQL's own full-text search: ``ts_rank`` has no inverse document
frequency and the ``english`` configuration stems with Snowball (Porter2) and drops
its own stopwords, so its ranking is not the SQLite backend's. Measured on the RQ1
request sets, the top lexical match agreed with SQLite FTS5 on 57-100% of requests
(``ts_rank``; 11-78% with ``ts_rank_cd``) against 100% for the BM25 below (see the
README section on the PostgreSQL backend).

So the PostgreSQL backend stores what FTS5's ``bm25()`` reads and evaluates the same
formula in SQL:

- tokens come from FTS5's own tokenizer (``porter unicode61 remove_diacritics 2``),
  run in an in-memory SQLite database in the client (:class:`Fts5Tokenizer`), so both
  backends stem and fold alike;
- one posting row per (document, term) with the term's positions (a query phrase that
  the tokenizer splits into several tokens, e.g. ``foo_bar``, matches adjacent
  positions, as an FTS5 phrase does);
- per-scope totals (documents, tokens) on the scope's row;
- per-term document counts (``item_df``/``desc_df``), which the commit function adds to
  in batches (:data:`FOLD_EVERY`): a document is uncounted while its row says not
  ``counted`` and its key is past the scope's fold mark (:func:`uncounted_sql`); it
  keeps its distinct ``terms``, so a reader adds the uncounted documents to the
  stored counts (:func:`stats`) and a removal finds a document's postings by key.

Score of a document D for the phrases q_i of a query (FTS5's constants k1 = 1.2,
b = 0.75; |D| counts the scope-tag column's one token, as FTS5 does; N, n(q_i) and
avgdl over every indexed document of the scope, discarded history included, as
FTS5's index holds it until compaction)::

    sum_i idf(q_i) * f(q_i, D) * (k1 + 1) / (f(q_i, D) + k1 * (1 - b + b * |D| / avgdl))
    idf(q) = ln((N - n(q) + 0.5) / (n(q) + 0.5)), or 1e-6 where that is <= 0

evaluated in FTS5's operation order in float8, so scores agree to the last bit and
ties break identically (by history order). One difference: FTS5 in the SQLite
backend counts N over every scope of the file; here the totals are per scope, so one
user's memories never change another user's ranking (the same when a file holds one
scope, as every benchmark store does).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chronomem.fts5_tokenizer import TOKENIZE, Fts5Tokenizer, tokenizer

__all__ = ["TOKENIZE", "Fts5Tokenizer", "tokenizer", "Index", "ITEMS", "DESCRIPTORS"]


@dataclass(frozen=True)
class Index:
    """One lexical index: documents of kind ``docs`` (items or descriptors) in the store."""

    terms: str  # posting table: (scope_id, term, doc, pos int[])
    docs: str  # document table: (doc, scope_id, len[, body])
    body: bool  # whether the document table keeps the indexed text
    n_col: str  # per-scope totals on the scopes row
    tok_col: str
    df: str  # per-term document counts: (scope_id, term, n)
    mark: str  # on the scopes row: the commit function's documents up to it are counted

    def df_upsert(self, style: str = "?") -> str:
        """SQL adding ``(terms[], counts[])`` of one scope (placeholders ``style``) to
        the document counts, set-based."""
        a = style
        return (
            f"INSERT INTO {self.df} (scope_id, term, n) SELECT {a}, t, c FROM "
            f"unnest({a}::text[], {a}::int[]) AS u(t, c) ON CONFLICT (scope_id, term) "
            f"DO UPDATE SET n = {self.df}.n + excluded.n"
        )


# A scope's documents indexed by the commit function but not yet in the document
# counts, folded in together once this many commits left some (see schema's
# DEFERRED_COUNTS): a larger batch shares more upserts between documents (common
# words), a smaller one keeps the readers' extra probe (below) short.
FOLD_EVERY = 64


def uncounted_sql(ix: Index, doc: str, scope: str) -> str:
    """SQL condition: document ``doc`` (a ``{ix.docs}`` alias) of scope ``scope`` is not
    in the document counts yet. The commit function writes its documents with
    ``counted`` false (the other paths count at once) and a fold moves the scope's mark
    past them: documents keep their row, so a fold writes no row of theirs (rewriting
    each document to flip a flag was about a quarter of a fold's time and a fifth of
    its WAL). The mark only grows, and a scope's document keys grow with its commits
    (drawn from sequences under the scope's lock), so the documents past it are
    exactly the ones written since the last fold, and the documents' index on
    ``(scope_id, doc)`` (schema pg7) reads just those: a range of it."""
    return (
        f"NOT {doc}.counted AND {doc}.doc > (SELECT {ix.mark} FROM scopes WHERE scope_id = {scope})"
    )


def fold_sql(ix: Index, scope: str) -> str:
    """One statement folding a scope's uncounted documents of ``ix`` into its counts
    (``scope``: an SQL expression or the commit function's variable, never a
    placeholder: it occurs several times): it adds their terms and moves the scope's
    mark past them. The caller holds the scope's row lock (the commit function, every
    write transaction, :func:`fold`), so two folds of a scope never overlap."""
    return (
        f"WITH m AS MATERIALIZED (SELECT d.doc, d.terms FROM {ix.docs} d "
        f"WHERE d.scope_id = {scope} AND {uncounted_sql(ix, 'd', scope)}), "
        f"c AS (INSERT INTO {ix.df} (scope_id, term, n) "
        f"SELECT {scope}, u.term, count(*) FROM m CROSS JOIN LATERAL unnest(m.terms) "
        f"AS u(term) GROUP BY u.term "
        f"ON CONFLICT (scope_id, term) DO UPDATE SET n = {ix.df}.n + excluded.n) "
        f"UPDATE scopes SET {ix.mark} = (SELECT max(m.doc) FROM m) "
        f"WHERE scope_id = {scope} AND EXISTS (SELECT 1 FROM m)"
    )


def fold(conn: Any, ix: Index, scope_ids: Iterable[int]) -> None:
    """Fold the uncounted documents of these scopes into ``ix``'s document counts."""
    for sid in sorted({int(s) for s in scope_ids}):
        conn.execute("SELECT 1 FROM scopes WHERE scope_id = ? FOR UPDATE", (sid,))
        conn.execute(fold_sql(ix, str(sid)))


def terms_literal(terms: Iterable[str]) -> str:
    """A ``text[]`` literal of stored terms (each quoted: a token is letters and digits,
    but a literal must not depend on that)."""
    quoted = ('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in terms)
    return "{" + ",".join(quoted) + "}"


ITEMS = Index(
    "item_terms", "item_docs", False, "item_n", "item_tok", "item_df", "item_mark"
)  # the texts themselves: blobs
DESCRIPTORS = Index("desc_terms", "desc_docs", True, "desc_n", "desc_tok", "desc_df", "desc_mark")


def df_counts(posted: Sequence[tuple[dict[str, list[int]], int]]) -> tuple[list[str], list[int]]:
    """(stored terms, documents holding each) of tokenized documents."""
    counts: dict[str, int] = {}
    for terms, _ in posted:
        for term in terms:
            key = term_key(term)
            counts[key] = counts.get(key, 0) + 1
    return list(counts), list(counts.values())


MAX_TERM_BYTES = 512  # longer tokens are stored by digest (a btree entry must fit 2,704 bytes)


def term_key(term: str) -> str:
    """The stored form of a token: itself, or for a very long one (a word of thousands
    of letters, which FTS5 indexes whole) ``#`` and its SHA-256, so such a text is
    stored and matched as SQLite matches it instead of overflowing the posting index;
    ``#`` never occurs in a token, so a digest cannot equal a real term."""
    if len(term) * 4 <= MAX_TERM_BYTES or len(term.encode("utf-8")) <= MAX_TERM_BYTES:
        return term
    return "#" + hashlib.sha256(term.encode("utf-8")).hexdigest()


def index(conn: Any, ix: Index, scope_id: int, docs: Sequence[tuple[int, str]]) -> None:
    """Add documents ``[(doc id, text)]`` of one scope to index ``ix``."""
    if not docs:
        return
    posted = tokenizer().postings([text for _, text in docs])
    body = ix.body
    conn.executemany(
        f"INSERT INTO {ix.docs} (doc, scope_id, len, terms{', body' if body else ''}) "
        f"VALUES (?, ?, ?, ?{', ?' if body else ''})",
        [
            (doc, scope_id, n, [term_key(t) for t in terms], *((text,) if body else ()))
            for (doc, text), (terms, n) in zip(docs, posted, strict=True)
        ],
    )
    conn.executemany(
        f"INSERT INTO {ix.terms} (scope_id, term, doc, pos) VALUES (?, ?, ?, ?)",
        [
            (scope_id, term_key(term), doc, pos)
            for (doc, _), (terms, _) in zip(docs, posted, strict=True)
            for term, pos in terms.items()
        ],
    )
    terms, counts = df_counts(posted)
    if terms:
        conn.execute(ix.df_upsert(), (scope_id, terms, counts))
    conn.execute(
        f"UPDATE scopes SET {ix.n_col} = {ix.n_col} + ?, {ix.tok_col} = {ix.tok_col} + ? "
        "WHERE scope_id = ?",
        (len(docs), sum(n for _, n in posted), scope_id),
    )


def unindex(conn: Any, ix: Index, docs: Iterable[int]) -> None:
    """Remove documents from index ``ix`` (and from their scopes' totals)."""
    ids = [int(d) for d in docs]
    if not ids:
        return
    # Documents by a join with the list, never "doc = ANY(list)": the documents are
    # hash-partitioned, and the planner prunes partitions for each element of a
    # constant array (compaction's thousands of documents: 0.5 s per statement).
    # Per scope: how many of its documents go, and whether any document of it is not
    # counted yet (the counts below must hold every document before they go down).
    scopes = conn.execute(
        f"SELECT d.scope_id, count(*), max(s.{ix.n_col}), "
        f"bool_or(NOT d.counted AND d.doc > s.{ix.mark}) "
        f"FROM {ix.docs} d JOIN scopes s ON s.scope_id = d.scope_id "
        "WHERE d.doc IN (SELECT unnest(?::bigint[])) "
        "GROUP BY d.scope_id",
        (ids,),
    ).fetchall()
    # A scope losing most of its documents (compaction after an early truncate) gets its
    # counts recounted from the postings that stay: that reads what stays, where taking
    # each removed posting out of the counts updates a count row per removed term (at
    # 10,000 writes, 90% removed: 1.3 s of the 5-6 s compaction for the descriptors).
    recount = sorted(int(sid) for sid, gone, total, _ in scopes if 2 * int(gone) >= int(total))
    fold(conn, ix, [int(r[0]) for r in scopes if r[3] or int(r[0]) in recount])
    # Each removed document's postings by their key (scope, term, document), from the
    # terms its row keeps: no index on the document alone is needed (nor kept). The list
    # is MATERIALIZED: inlined, the planner probed the postings' key by (scope, document)
    # alone, a scan of the scope's whole key range per document (4,000 writes: 130 s in
    # one DELETE); as a CTE it can only probe by the full key or hash it in one pass.
    held = (
        f"WITH h AS MATERIALIZED (SELECT d.scope_id, u.term, d.doc FROM {ix.docs} d "
        "CROSS JOIN LATERAL unnest(d.terms) AS u(term) "
        "WHERE d.doc IN (SELECT unnest(?::bigint[])) "
        "AND d.scope_id <> ALL(?::bigint[])) "
    )
    if len(recount) < len(scopes):
        # document counts down by the postings about to go; a count at 0 is deleted (its
        # term may be an erased word: it must not stay behind as a key). The emptied
        # keys come back from the UPDATE and are deleted by key: a join against a
        # subquery of the postings was estimated at one row, and the planner's nested
        # loop over the whole count table made compaction quadratic (4,000 writes: 57 s
        # in that DELETE).
        emptied = conn.execute(
            f"{held}UPDATE {ix.df} f SET n = f.n - d.c FROM (SELECT h.scope_id, h.term, "
            "count(*) AS c FROM h GROUP BY h.scope_id, h.term) d "
            "WHERE f.scope_id = d.scope_id AND f.term = d.term RETURNING f.scope_id, f.term, f.n",
            (ids, recount),
        ).fetchall()
        zero = [(int(sid), term) for sid, term, n in emptied if n <= 0]
        if zero:
            conn.execute(
                f"DELETE FROM {ix.df} f USING unnest(?::bigint[], ?::text[]) AS "
                "u(scope_id, term) WHERE f.scope_id = u.scope_id AND f.term = u.term "
                "AND f.n <= 0",
                ([sid for sid, _ in zero], [term for _, term in zero]),
            )
        conn.execute(
            f"{held}DELETE FROM {ix.terms} t USING h "
            "WHERE t.scope_id = h.scope_id AND t.term = h.term AND t.doc = h.doc",
            (ids, recount),
        )
    gone = conn.execute(
        f"DELETE FROM {ix.docs} WHERE doc IN (SELECT unnest(?::bigint[])) RETURNING scope_id, len",
        (ids,),
    ).fetchall()
    for sid in recount:
        # Most of the scope's postings go: those of documents that are gone, in one pass
        # over the scope's postings (an anti-join), cheaper than finding each by its key;
        # then every count of the scope afresh, from the postings left.
        conn.execute(
            f"DELETE FROM {ix.terms} t WHERE t.scope_id = ? AND NOT EXISTS "
            f"(SELECT 1 FROM {ix.docs} d WHERE d.doc = t.doc)",
            (sid,),
        )
        conn.execute(f"DELETE FROM {ix.df} WHERE scope_id = ?", (sid,))
        conn.execute(
            f"INSERT INTO {ix.df} (scope_id, term, n) SELECT scope_id, term, count(*) "
            f"FROM {ix.terms} WHERE scope_id = ? GROUP BY scope_id, term",
            (sid,),
        )
    totals: dict[int, list[int]] = {}
    for sid, n in gone:
        t = totals.setdefault(int(sid), [0, 0])
        t[0] += 1
        t[1] += int(n)
    for sid, (count, tokens) in totals.items():
        conn.execute(
            f"UPDATE scopes SET {ix.n_col} = {ix.n_col} - ?, {ix.tok_col} = {ix.tok_col} - ? "
            "WHERE scope_id = ?",
            (count, tokens, sid),
        )


def stats(conn: Any, ix: Index, scope_id: int, tokens: Sequence[str]) -> tuple[int, int, list[int]]:
    """What :func:`bm25` reads for single-token phrases, in one round trip: the scope's
    documents, tokens (each document's tag token included) and documents holding each
    of ``tokens``."""
    wanted = sorted({term_key(t) for t in tokens})
    # stored counts plus the terms of the documents not yet folded into them (about
    # FOLD_EVERY commits' worth), from one snapshot: exact whenever it is read
    rows = conn.execute(
        f"SELECT NULL, {ix.n_col}, {ix.tok_col} FROM scopes WHERE scope_id = ? UNION ALL "
        f"SELECT term, n, 0 FROM {ix.df} WHERE scope_id = ? AND term = ANY(?) UNION ALL "
        f"SELECT u.term, count(*), 0 FROM {ix.docs} d CROSS JOIN LATERAL unnest(d.terms) "
        f"AS u(term) WHERE d.scope_id = ? AND {uncounted_sql(ix, 'd', '?')} "
        "AND u.term = ANY(?) GROUP BY u.term",
        (scope_id, scope_id, wanted, scope_id, scope_id, wanted),
    ).fetchall()
    n, tok = next(((int(r[1]), int(r[2])) for r in rows if r[0] is None), (0, 0))
    hits: dict[str, int] = {}
    for term, count, _ in rows:
        if term is not None:
            hits[term] = hits.get(term, 0) + int(count)
    return n, tok + n, [hits.get(term_key(t), 0) for t in tokens]


def _hits_sql(ix: Index, phrases: list[list[str]]) -> tuple[str, list[Any]]:
    """SQL (idx, doc, tf) of every document holding each phrase, and its arguments."""
    parts: list[str] = []
    args: list[Any] = []
    single = [(i, p[0]) for i, p in enumerate(phrases) if len(p) == 1]
    if single:
        parts.append(
            "SELECT q.idx, t.doc, cardinality(t.pos) AS tf FROM unnest(?::int[], ?::text[]) "
            f"AS q(idx, term) JOIN {ix.terms} t ON t.scope_id = ? AND t.term = q.term"
        )
        args += [[i for i, _ in single], [term_key(t) for _, t in single], None]  # scope later
    for i, phrase in enumerate(phrases):
        if len(phrase) < 2:
            continue
        # Occurrences of the phrase: a start position of its first token such that token
        # j sits at start + j, as FTS5 matches a multi-token phrase.
        joins = " ".join(
            f"JOIN {ix.terms} t{j} ON t{j}.scope_id = t0.scope_id AND t{j}.doc = t0.doc "
            f"AND t{j}.term = ? AND (p.start + {j}) = ANY(t{j}.pos)"
            for j in range(1, len(phrase))
        )
        parts.append(
            f"SELECT {i} AS idx, t0.doc, count(*) AS tf FROM {ix.terms} t0 "
            f"CROSS JOIN LATERAL unnest(t0.pos) AS p(start) {joins} "
            "WHERE t0.scope_id = ? AND t0.term = ? GROUP BY t0.doc"
        )
        args += [*map(term_key, phrase[1:]), None, term_key(phrase[0])]
    return " UNION ALL ".join(parts), args


def bm25(
    conn: Any,
    ix: Index,
    scope_id: int,
    terms: Sequence[str],
    *,
    owner: str,
    where: str,
    key: str,
    tiebreak: str,
    args: Sequence[Any] = (),
    limit: int | None = None,
) -> list[tuple[int, float]]:
    """``[(key, score)]`` of the scope's documents matching any of ``terms``, best first.

    ``owner`` joins the table that owns the documents on ``h.doc`` (e.g. ``JOIN versions
    v ON v.vrow = h.doc``), ``where`` filters its rows (visibility, liveness; ``?``
    arguments in ``args``), ``key`` is the column returned, ``tiebreak`` orders equal
    scores. Statistics are the whole index's, unfiltered, as in FTS5.
    """
    phrases = tokenizer().phrases(list(terms))
    if not any(phrases):
        return []
    hits, hit_args = _hits_sql(ix, phrases)
    hit_args = [scope_id if a is None else a for a in hit_args]
    k1, b, half = "1.2::float8", "0.75::float8", "0.5::float8"
    ratio = f"(st.n - df.nhit + {half}) / (df.nhit + {half})"
    sql = (
        f"WITH hits AS ({hits}), "
        f"st AS (SELECT {ix.n_col}::float8 AS n, ({ix.tok_col} + {ix.n_col})::float8 / "
        f"greatest({ix.n_col}, 1)::float8 AS avgdl FROM scopes WHERE scope_id = ?), "
        "df AS (SELECT idx, count(*)::float8 AS nhit FROM hits GROUP BY idx), "
        f"idf AS (SELECT df.idx, CASE WHEN ln({ratio}) <= 0 THEN 1e-6::float8 "
        f"ELSE ln({ratio}) END AS idf FROM df CROSS JOIN st) "
        f"SELECT {key}, sum(idf.idf * ((h.tf::float8 * ({k1} + 1.0::float8)) / "
        f"(h.tf::float8 + {k1} * (1::float8 - {b} + {b} * (d.len + 1)::float8 / st.avgdl))) "
        f"ORDER BY h.idx) AS score FROM hits h JOIN idf ON idf.idx = h.idx "
        f"JOIN {ix.docs} d ON d.doc = h.doc {owner} CROSS JOIN st WHERE {where} "
        f"GROUP BY {key}, {tiebreak} ORDER BY score DESC, {tiebreak}"
        + (" LIMIT ?" if limit is not None else "")
    )
    params = [*hit_args, scope_id, *args, *([int(limit)] if limit is not None else [])]
    return [(int(k), float(s)) for k, s in conn.execute(sql, params).fetchall()]
