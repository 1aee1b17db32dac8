"""The PostgreSQL backend's lexical-search methods (the index and BM25 live in :mod:`.lexical`).

:class:`PgLexicon` is a mixin of :class:`~chronomem.pg.backend.PostgresBackend`,
which supplies the connection: it adds and removes documents in the item and descriptor
indexes, ranks them by BM25 and reads the statistics the in-memory lexical index needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from chronomem.pg import lexical as lex
from chronomem.pg.conn import PgConn
from chronomem.sql import alive, visible


class PgLexicon:
    """The lexical-search half of :class:`~chronomem.pg.backend.PostgresBackend`."""

    conn: PgConn

    def index_item(self, scope_id: int, span_id: int, text: str) -> None:
        """Add a span's text to the item index."""
        lex.index(self.conn, lex.ITEMS, scope_id, [(span_id, text)])

    def index_items(self, scope_id: int, spans: Sequence[tuple[int, str]]) -> None:
        """Add many spans' texts to the item index in one batch (a branch's copied items:
        one statistics update instead of one per span)."""
        lex.index(self.conn, lex.ITEMS, scope_id, list(spans))

    def unindex_items(self, span_ids: Iterable[int]) -> None:
        """Remove spans from the item index."""
        lex.unindex(self.conn, lex.ITEMS, span_ids)

    def match_items(self, scope_id: int, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Live spans by BM25 (the index also holds closed and discarded spans)."""
        if k <= 0:
            return []
        return lex.bm25(
            self.conn, lex.ITEMS, scope_id, terms,
            owner="JOIN spans s ON s.span_id = h.doc",
            where=alive(self.conn, scope_id, "s"), key="h.doc", tiebreak="h.doc", limit=k,
        )  # fmt: skip

    def index_descriptor(self, scope_id: int, vrow: int, body: str) -> None:
        """Add a version's lexical descriptor to the descriptor index."""
        lex.index(self.conn, lex.DESCRIPTORS, scope_id, [(vrow, body)])

    def unindex_descriptors(self, vrows: Iterable[int]) -> None:
        """Remove versions from the descriptor index."""
        lex.unindex(self.conn, lex.DESCRIPTORS, vrows)

    def match_descriptors(
        self, scope_id: int, terms: Sequence[str], k: int
    ) -> list[tuple[int, float]]:
        """Visible versions by BM25, ties in seq order."""
        if k <= 0:
            return []
        return lex.bm25(
            self.conn, lex.DESCRIPTORS, scope_id, terms,
            owner="JOIN versions v ON v.vrow = h.doc",
            where=visible(self.conn, scope_id, "v.seq"), key="v.version_id", tiebreak="v.seq",
            limit=k,
        )  # fmt: skip

    def descriptor_scores(
        self, scope_id: int, terms: Sequence[str], version_ids: Iterable[int]
    ) -> dict[int, float | None]:
        """The BM25 score of each version (None: no term matches)."""
        vids = [int(v) for v in version_ids]
        out: dict[int, float | None] = dict.fromkeys(vids)
        if not vids:
            return out
        got = lex.bm25(
            self.conn, lex.DESCRIPTORS, scope_id, terms,
            owner="JOIN versions v ON v.vrow = h.doc", where="v.version_id = ANY(?)",
            args=[vids], key="v.version_id", tiebreak="v.seq",
        )  # fmt: skip
        out.update(dict(got))
        return out

    def descriptor_docs(
        self, scope_id: int, after_seq: int = -1
    ) -> tuple[list[int], list[int], list[str]]:
        """Visible versions after ``after_seq``: ids, seqs and indexed bodies, in seq order."""
        rows = self.conn.execute(
            "SELECT v.version_id, v.seq, d.body FROM versions v JOIN desc_docs d ON "
            "d.doc = v.vrow WHERE v.scope_id = ? AND v.seq > ? AND "
            f"{visible(self.conn, scope_id, 'v.seq')} ORDER BY v.seq",
            (scope_id, int(after_seq)),
        ).fetchall()
        return [int(r[0]) for r in rows], [int(r[1]) for r in rows], [r[2] for r in rows]

    def descriptor_lengths(
        self, scope_id: int, after_seq: int = -1
    ) -> tuple[list[int], list[int], list[int], list[float]]:
        """Visible versions after ``after_seq``: ids, seqs, document keys and lengths
        with the tag token (as :func:`~chronomem.pg.lexical.bm25` counts them)."""
        rows = self.conn.execute(
            "SELECT v.version_id, v.seq, v.vrow, d.len FROM versions v JOIN desc_docs d ON "
            "d.doc = v.vrow WHERE v.scope_id = ? AND v.seq > ? AND "
            f"{visible(self.conn, scope_id, 'v.seq')} ORDER BY v.seq",
            (scope_id, int(after_seq)),
        ).fetchall()
        return (
            [int(r[0]) for r in rows],
            [int(r[1]) for r in rows],
            [int(r[2]) for r in rows],
            [float(int(r[3]) + 1) for r in rows],
        )

    def descriptor_postings(self, scope_id: int, token: str) -> tuple[list[int], list[int]]:
        """The scope's documents holding ``token``, and how often."""
        rows = self.conn.execute(
            "SELECT doc, cardinality(pos) FROM desc_terms WHERE scope_id = ? AND term = ?",
            (scope_id, lex.term_key(token)),
        ).fetchall()
        return [int(r[0]) for r in rows], [int(r[1]) for r in rows]

    def descriptor_stats(self, scope_id: int, tokens: Sequence[str]) -> tuple[int, int, list[int]]:
        """The scope's totals (documents; tokens with each document's tag token, as
        :func:`~chronomem.pg.lexical.bm25` counts them) and per-token documents."""
        return lex.stats(self.conn, lex.DESCRIPTORS, scope_id, tokens)

    def item_stats(self, scope_id: int, tokens: Sequence[str]) -> tuple[int, int, list[int]]:
        """What :meth:`match_items` scores with, as :meth:`descriptor_stats` (every span
        the scope's item index holds: closed and discarded ones too)."""
        return lex.stats(self.conn, lex.ITEMS, scope_id, tokens)

    def descriptor_body(self, vrow: int) -> str | None:
        """The indexed lexical descriptor of a version row."""
        got = self.conn.execute("SELECT body FROM desc_docs WHERE doc = ?", (vrow,)).fetchone()
        return got[0] if got else None

    def descriptors_containing(self, scope_id: int, needle: str) -> list[tuple[int, str]]:
        """``[(vrow, body)]`` of the scope's indexed descriptors containing ``needle``."""
        return [
            (int(d), b)
            for d, b in self.conn.execute(
                "SELECT doc, body FROM desc_docs WHERE scope_id = ? AND strpos(body, ?) > 0",
                (scope_id, needle),
            ).fetchall()
        ]

    def indexed_items(self, scope_id: int) -> set[int]:
        """Span ids in the scope's item index."""
        rows = self.conn.execute("SELECT doc FROM item_docs WHERE scope_id = ?", (scope_id,))
        return {int(r[0]) for r in rows.fetchall()}

    def indexed_descriptors(self, scope_id: int) -> set[int]:
        """Version rows in the scope's descriptor index."""
        rows = self.conn.execute("SELECT doc FROM desc_docs WHERE scope_id = ?", (scope_id,))
        return {int(r[0]) for r in rows.fetchall()}
