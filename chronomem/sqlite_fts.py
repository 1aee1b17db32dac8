"""The SQLite backend's lexical indexes: FTS5 MATCH, ``bm25()`` and its statistics.

``item_fts`` and ``desc_fts`` (porter tokenizer) carry a ``tag`` column holding
:func:`scope_tag`, so one MATCH stays inside one scope; scores are ``-bm25`` with the
tag column weighted 0. The statistics ``bm25()`` reads (row and token counts, document
frequencies) come from FTS5's own records and ``fts5vocab`` tables, so a ranking built
from them equals FTS5's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from chronomem.query import or_expression
from chronomem.sql import alive, visible


def scope_tag(scope_id: int) -> str:
    """FTS token that confines a MATCH to one scope."""
    return f"s{scope_id}"


def _match(scope_id: int, terms: Sequence[str]) -> str | None:
    expr = or_expression(list(terms))
    return None if expr is None else f'tag : "{scope_tag(scope_id)}" AND body : ({expr})'


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (as FTS5 writes its records) read from ``blob``."""
    out, i = [], 0
    while i < len(blob):
        v = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                v = (v << 8) | byte
                break
            v = (v << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(v)
    return out


def _averages(blob: bytes) -> tuple[int, int]:
    """(rows, tokens over every column) from FTS5's averages record."""
    vals = _varints(blob)
    return (vals[0], sum(vals[1:])) if vals else (0, 0)


class SQLiteLexicon:
    """The lexical-search half of :class:`~chronomem.sqlite_backend.SQLiteBackend`
    (a mixin: the backend supplies the connection and initialises the caches)."""

    conn: sqlite3.Connection
    _vocab: bool  # the temp fts5vocab tables created on this connection
    _stats: dict[str, tuple[Any, tuple[int, int], dict[str, int]]]  # per index: see _fts_stats

    def index_item(self, scope_id: int, span_id: int, text: str) -> None:
        """Add a span's text to ``item_fts``."""
        self.conn.execute(
            "INSERT INTO item_fts (rowid, tag, body) VALUES (?, ?, ?)",
            (span_id, scope_tag(scope_id), text),
        )

    def index_items(self, scope_id: int, spans: Sequence[tuple[int, str]]) -> None:
        """Add many spans' texts to ``item_fts`` at once (a branch's copied items)."""
        tag = scope_tag(scope_id)
        self.conn.executemany(
            "INSERT INTO item_fts (rowid, tag, body) VALUES (?, ?, ?)",
            [(span_id, tag, text) for span_id, text in spans],
        )

    def unindex_items(self, span_ids: Iterable[int]) -> None:
        """Delete spans from ``item_fts``."""
        self.conn.executemany("DELETE FROM item_fts WHERE rowid = ?", [(s,) for s in span_ids])

    def match_items(self, scope_id: int, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Live spans by ``-bm25`` (the index also holds closed and discarded spans)."""
        match = _match(scope_id, terms)
        if match is None:
            return []
        # "+rowid": a plain rowid IN (...) is pushed into FTS5, which then runs the MATCH
        # once per listed rowid (seconds at 10k items).
        return self.conn.execute(
            "SELECT rowid, -bm25(item_fts, 0.0, 1.0) FROM item_fts WHERE item_fts "
            "MATCH ? AND +rowid IN (SELECT s.span_id FROM spans s WHERE s.scope_id = ? "
            f"AND {alive(self.conn, scope_id)}) ORDER BY bm25(item_fts, 0.0, 1.0) LIMIT ?",
            (match, scope_id, k),
        ).fetchall()

    def index_descriptor(self, scope_id: int, vrow: int, body: str) -> None:
        """Add a version's lexical descriptor to ``desc_fts``."""
        self.conn.execute(
            "INSERT INTO desc_fts (rowid, tag, body) VALUES (?, ?, ?)",
            (vrow, scope_tag(scope_id), body),
        )

    def unindex_descriptors(self, vrows: Iterable[int]) -> None:
        """Delete versions from ``desc_fts``."""
        self.conn.executemany("DELETE FROM desc_fts WHERE rowid = ?", [(v,) for v in vrows])

    def match_descriptors(
        self, scope_id: int, terms: Sequence[str], k: int
    ) -> list[tuple[int, float]]:
        """Visible versions by ``-bm25``, ties in seq order."""
        match = _match(scope_id, terms)
        if match is None or k <= 0:
            return []
        rows = self.conn.execute(
            "SELECT v.version_id, bm25(desc_fts, 0.0, 1.0) AS s FROM desc_fts "
            "JOIN versions v ON v.vrow = desc_fts.rowid WHERE desc_fts MATCH ? "
            f"AND {visible(self.conn, scope_id, 'v.seq')} ORDER BY s ASC, v.seq ASC LIMIT ?",
            (match, int(k)),
        ).fetchall()
        return [(int(v), -float(s)) for v, s in rows]

    def descriptor_scores(
        self, scope_id: int, terms: Sequence[str], version_ids: Iterable[int]
    ) -> dict[int, float | None]:
        """``-bm25`` of each version, one rowid lookup each."""
        match = _match(scope_id, terms)
        out: dict[int, float | None] = {}
        for vid in version_ids:
            row = None
            if match is not None:
                row = self.conn.execute(
                    "SELECT bm25(desc_fts, 0.0, 1.0) FROM desc_fts WHERE desc_fts MATCH ? AND "
                    "rowid = (SELECT vrow FROM versions WHERE scope_id = ? AND version_id = ?)",
                    (match, scope_id, vid),
                ).fetchone()
            out[vid] = None if row is None else -float(row[0])
        return out

    def descriptor_docs(
        self, scope_id: int, after_seq: int = -1
    ) -> tuple[list[int], list[int], list[str]]:
        """Visible versions after ``after_seq``: ids, seqs and ``desc_fts`` bodies, in
        seq order."""
        rows = self.conn.execute(
            "SELECT v.version_id, v.seq, f.body FROM versions v JOIN desc_fts f ON "
            f"f.rowid = v.vrow WHERE v.scope_id = ? AND v.seq > ? AND "
            f"{visible(self.conn, scope_id, 'v.seq')} ORDER BY v.seq",
            (scope_id, int(after_seq)),
        ).fetchall()
        return [int(r[0]) for r in rows], [int(r[1]) for r in rows], [r[2] for r in rows]

    def descriptor_lengths(
        self, scope_id: int, after_seq: int = -1
    ) -> tuple[list[int], list[int], list[int], list[float]]:
        """Visible versions after ``after_seq``: ids, seqs, ``desc_fts`` rowids and token
        counts over every column (FTS5's ``docsize`` record), in seq order."""
        rows = self.conn.execute(
            "SELECT v.version_id, v.seq, v.vrow, d.sz FROM versions v JOIN desc_fts_docsize d "
            f"ON d.id = v.vrow WHERE v.scope_id = ? AND v.seq > ? AND "
            f"{visible(self.conn, scope_id, 'v.seq')} ORDER BY v.seq",
            (scope_id, int(after_seq)),
        ).fetchall()
        return (
            [int(r[0]) for r in rows],
            [int(r[1]) for r in rows],
            [int(r[2]) for r in rows],
            [float(sum(_varints(r[3]))) for r in rows],
        )

    def descriptor_postings(self, scope_id: int, token: str) -> tuple[list[int], list[int]]:
        """``desc_fts`` rowids whose body holds ``token``, and how often (every scope's:
        the caller keeps its own)."""
        self._ensure_vocab()
        rows = self.conn.execute(
            "SELECT doc FROM temp.desc_inst WHERE term = ? AND col = 'body'", (token,)
        ).fetchall()
        docs, counts = np.unique(
            np.fromiter((r[0] for r in rows), np.int64, len(rows)), return_counts=True
        )
        return docs.tolist(), counts.tolist()

    def _ensure_vocab(self) -> None:
        if not self._vocab:
            for table in ("desc", "item"):
                self.conn.execute(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_vocab USING fts5vocab "
                    f"(main, {table}_fts, col)"
                )
            self.conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.desc_inst USING fts5vocab "
                "(main, desc_fts, instance)"
            )
            self._vocab = True

    def descriptor_stats(self, scope_id: int, tokens: Sequence[str]) -> tuple[int, int, list[int]]:
        """What FTS5's ``bm25()`` reads: the table's rows and tokens (every column, every
        scope) from its averages record, and the rows whose body holds each token (from
        an ``fts5vocab`` table in the connection's temp schema)."""
        return self._fts_stats("desc", tokens)

    def item_stats(self, scope_id: int, tokens: Sequence[str]) -> tuple[int, int, list[int]]:
        """What :meth:`match_items`' ``bm25()`` reads, from ``item_fts`` (every span ever
        indexed, of every scope), as :meth:`descriptor_stats` reads ``desc_fts``."""
        return self._fts_stats("item", tokens)

    def _fts_stats(self, table: str, tokens: Sequence[str]) -> tuple[int, int, list[int]]:
        conn = self.conn
        self._ensure_vocab()
        # Counts are kept until the file changes: another connection's commit moves
        # data_version, this connection's writes move total_changes.
        state = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        cached = self._stats.get(table)
        if cached is None or cached[0] != state:
            row = conn.execute(f"SELECT block FROM {table}_fts_data WHERE id = 1").fetchone()
            cached = self._stats[table] = (state, _averages(row[0] if row else b""), {})
        _, (n_docs, n_tokens), known = cached
        wanted = sorted(set(tokens) - set(known))
        if wanted:
            found = dict(
                conn.execute(
                    f"SELECT term, doc FROM temp.{table}_vocab WHERE col = 'body' AND term IN "
                    f"({','.join('?' * len(wanted))})",
                    tuple(wanted),
                ).fetchall()
            )
            known.update({t: int(found.get(t, 0)) for t in wanted})
        return n_docs, n_tokens, [known[t] for t in tokens]

    def descriptor_body(self, vrow: int) -> str | None:
        """The ``desc_fts`` body of a version row."""
        got = self.conn.execute("SELECT body FROM desc_fts WHERE rowid = ?", (vrow,)).fetchone()
        return got[0] if got else None

    def descriptors_containing(self, scope_id: int, needle: str) -> list[tuple[int, str]]:
        """``desc_fts`` rows of the scope whose body contains ``needle``."""
        return self.conn.execute(
            "SELECT rowid, body FROM desc_fts WHERE desc_fts MATCH ? AND instr(body, ?) > 0",
            (f'tag : "{scope_tag(scope_id)}"', needle),
        ).fetchall()

    def indexed_items(self, scope_id: int) -> set[int]:
        """Rowids of the scope's ``item_fts`` rows."""
        return self._tagged("item_fts", scope_id)

    def indexed_descriptors(self, scope_id: int) -> set[int]:
        """Rowids of the scope's ``desc_fts`` rows."""
        return self._tagged("desc_fts", scope_id)

    def _tagged(self, table: str, scope_id: int) -> set[int]:
        rows = self.conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (f'tag : "{scope_tag(scope_id)}"',)
        )
        return {int(r[0]) for r in rows.fetchall()}
