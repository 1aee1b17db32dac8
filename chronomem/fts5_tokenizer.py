"""FTS5's own tokenizer, run outside any store, so token counts match the backend's index.

The SQLite backend's FTS5 tables use :data:`TOKENIZE`; running the same tokenizer on
an in-memory table gives the tokens FTS5 indexes, to the byte (the in-memory lexical
index and the PostgreSQL backend both count with it).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

TOKENIZE = "porter unicode61 remove_diacritics 2"  # the SQLite backend's FTS5 tokenizer


class Fts5Tokenizer:
    """FTS5's tokenizer, run on an in-memory SQLite table (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        # contentless: only the index is read back, so the text need not be stored
        # (a PostgreSQL commit tokenizes here, and this is part of its client CPU)
        self._conn.execute(
            f"CREATE VIRTUAL TABLE t USING fts5 (body, tokenize = '{TOKENIZE}', content = '')"
        )
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")

    def _vocab(self, texts: Sequence[str], sql: str) -> list[Any]:
        """``sql`` over the fts5vocab table of ``texts`` indexed alone (rolled back)."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT INTO t (rowid, body) VALUES (?, ?)", list(enumerate(texts))
                )
                return self._conn.execute(sql).fetchall()
            finally:
                self._conn.execute("ROLLBACK")

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's tokens, in order, as FTS5 indexes them."""
        if not texts:
            return []
        rows = self._vocab(texts, "SELECT doc, offset, term FROM v ORDER BY doc, offset")
        out: list[list[str]] = [[] for _ in texts]
        for doc, _, term in rows:
            out[doc].append(term)
        return out

    def counts(self, texts: Sequence[str]) -> tuple[list[tuple[str, int, int]], list[int]]:
        """``[(term, text index, occurrences)]`` sorted by term then text, and each
        text's token count: what an index of ``texts`` holds."""
        if not texts:
            return [], []
        rows = self._vocab(texts, "SELECT term, doc, count(*) FROM v GROUP BY term, doc")
        lengths = [0] * len(texts)
        for _, doc, n in rows:
            lengths[doc] += n
        return rows, lengths

    def postings(self, texts: Sequence[str]) -> list[tuple[dict[str, list[int]], int]]:
        """Per text: ({term: positions}, number of tokens)."""
        if not texts:
            return []
        rows = self._vocab(texts, "SELECT doc, offset, term FROM v ORDER BY doc, offset")
        # one pass over the rows, without the token lists of tokens(): the rows come in
        # token order, so a token's position is its text's count so far, each position
        # list is sorted and each dict holds its terms in order of first occurrence
        terms: list[dict[str, list[int]]] = [{} for _ in texts]
        lengths = [0] * len(texts)
        for doc, _, term in rows:
            terms[doc].setdefault(term, []).append(lengths[doc])
            lengths[doc] += 1
        return list(zip(terms, lengths, strict=True))

    def phrases(self, terms: Sequence[str]) -> list[list[str]]:
        """The token sequence FTS5 makes of each quoted query term (maybe empty)."""
        return self.tokens(list(terms))


_TOKENIZER: Fts5Tokenizer | None = None
_TOKENIZER_LOCK = threading.Lock()


def tokenizer() -> Fts5Tokenizer:
    """The process-wide tokenizer."""
    global _TOKENIZER
    with _TOKENIZER_LOCK:
        if _TOKENIZER is None:
            _TOKENIZER = Fts5Tokenizer()
        return _TOKENIZER
