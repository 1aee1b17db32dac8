"""FTS5's own tokenizer, run outside any store, so token counts match the backend's index.

The SQLite backend's FTS5 tables use :data:`TOKENIZE`; running the same tokenizer on
an in-memory table gives the tokens FTS5 indexes, to the byte (the in-memory lexical
index and the PostgreSQL backend both count with it).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

TOKENIZE = "porter unicode61 remove_diacritics 2"  # the SQLite backend's FTS5 tokenizer
STEM_CACHE = 200_000  # words whose stem is kept (a few tens of MB at most)


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
        self._ascii = self._ascii_table()
        self._stems: dict[str, str] = {}

    def _ascii_table(self) -> dict[int, int]:
        """A ``str.translate`` table that lower-cases the ASCII characters FTS5 keeps in
        a token and turns the others into spaces, learnt from FTS5 itself: each
        character between two letters either joins them or splits them."""
        chars = [chr(i) for i in range(128)]
        got = self._fts5_tokens([f"a{c}b" for c in chars])
        table: dict[int, int] = {}
        for c, toks in zip(chars, got, strict=True):
            if toks == ["a", "b"]:
                table[ord(c)] = ord(" ")
            elif toks == [f"a{c.lower()}b"]:
                table[ord(c)] = ord(c.lower())
            else:  # not a plain separator or token character: no fast path
                return {}
        return table

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
        """Each text's tokens, in order, as FTS5 indexes them.

        An ASCII text is split here, each word stemmed as FTS5 stems it alone (its
        stem cached): for ASCII, unicode61 only splits at separator characters and
        folds case, and the porter stemmer sees one token at a time, so this gives
        FTS5's tokens (``tests/test_fts5_tokenizer.py`` compares them). Once the
        words are known this takes about a seventh of the CPU of indexing the texts in
        SQLite (0.011 against 0.076 ms for a benchmark commit's texts), which a
        PostgreSQL commit pays for each text it indexes."""
        if not texts:
            return []
        if not self._ascii:
            return self._fts5_tokens(texts)
        out: list[list[str] | None] = []
        other: list[int] = []
        for n, text in enumerate(texts):
            if text.isascii():
                out.append(text.translate(self._ascii).split())
            else:
                out.append(None)
                other.append(n)
        stems = self._stems_of({w for toks in out if toks for w in toks})
        # a word the cache lacks now ends in a digit: it is its own stem (_stems_of)
        done = [[stems.get(w, w) for w in toks] if toks is not None else [] for toks in out]
        for n, toks in zip(other, self._fts5_tokens([texts[n] for n in other]), strict=True):
            done[n] = toks
        return done

    def _stems_of(self, words: set[str]) -> dict[str, str]:
        """The stem cache, holding the stem FTS5 gives each of ``words`` (lower-case
        ASCII words without separators) but those ending in a digit, which are their own
        stems; a full cache is emptied first, but for these.

        A word that ends in a digit is its own stem: every porter rule tests a suffix
        that ends in a letter ("item201", a word of digits; tests/test_fts5_tokenizer.py
        asks FTS5). Ids and numbers like these are new words in most commits: asking
        FTS5 was an SQLite round (a transaction, an insert, a vocabulary read) per
        commit, and caching them made every commit copy the whole cache (the copy below
        keeps readers in other threads safe), a cost growing with the words seen."""
        stems = self._stems
        todo = [w for w in words if w not in stems and not w[-1].isdigit()]
        if not todo:
            return stems
        if len(stems) + len(todo) > STEM_CACHE:
            stems = {w: stems[w] for w in words if w in stems}
        fresh = {}
        for w, toks in zip(todo, self._fts5_tokens(todo), strict=True):
            if len(toks) != 1:
                raise RuntimeError(f"FTS5 made {len(toks)} tokens of the word {w!r}")
            fresh[w] = toks[0]
        self._stems = {**stems, **fresh}  # a new dict: a reader in another thread keeps its own
        return self._stems

    def _fts5_tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's tokens from FTS5's index of it."""
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
        out = []
        for toks in self.tokens(texts):
            terms: dict[str, list[int]] = {}
            for pos, term in enumerate(toks):
                terms.setdefault(term, []).append(pos)
            out.append((terms, len(toks)))
        return out

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


def stems(words: Sequence[str]) -> list[str]:
    """Each word's stem as the index stems it (FTS5's porter), lower-cased; a word FTS5
    splits or drops keeps its lower-cased self. The one place a word's inflections
    ("camping", "camps", "camped") are read: what reads request words against the
    index asks here instead of stripping suffixes of its own."""
    words = [w.lower() for w in words]
    got = tokenizer().tokens(words)
    return [t[0] if len(t) == 1 else w for w, t in zip(words, got, strict=True)]


_ACTIVITY = re.compile(r"[a-z]+(?:ing|ed)\b")


def activity_stem(word: str) -> str | None:
    """The index's stem of ``word`` when it is an -ing word the stemmer shortens
    ("camping" -> ``camp``, "training" -> ``train``); None otherwise ("thing", "sing",
    "camps"). The porter stem joins an activity and a thing named by its root ("camping"
    and "boot camps", "painting" and "paint"): see :func:`holds_activity`."""
    w = word.lower()
    if not w.isalpha() or not w.endswith("ing") or len(w) < 6:
        return None
    stem = stems([w])[0]
    return stem if stem != w and len(stem) >= 3 else None


def holds_activity(text: str, stem: str) -> bool:
    """Whether ``text`` holds an -ing or -ed word that the index stems to ``stem``
    ("we went camping", "John camped"; not "boot camps" nor "a camp")."""
    found = sorted({w for w in _ACTIVITY.findall((text or "").lower()) if w.startswith(stem)})
    return any(s == stem for s in stems(found))
