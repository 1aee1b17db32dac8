"""Keyword matching for ``search_memory``: the service's own rules, independent of FTS5.

Why not the store's FTS5 index: its ``porter unicode61`` tokenizer stems English (so
"thon" could never match, but "running" would match "run", which ADK's memory services
do not do) and treats a run of CJK characters as one token, so "太郎" would not find
"私の名前は太郎です". Matching here follows what ADK users get from ADK's own
memory services, over the items of HEAD:

- text is NFC-normalised and case-folded, so NFC and NFD forms and cases match;
- a query word written in a script without spaces (Han, Hiragana, Katakana, Thai,
  Lao, Khmer, Myanmar) matches as a substring of the memory's text;
- every other word (Latin, Cyrillic, Greek, Korean Hangul, ...) matches whole words
  only, so "thon" does not find "Python";
- a token that mixes scripts (``私はPythonを使う``) is also split into its
  single-script runs, so the embedded "Python" is a word of its own.

A memory's score is the number of distinct query words it matches.

Why a scan over HEAD rather than an FTS5 trigram index: a trigram index cannot answer
a query shorter than three characters ("太郎" is two), would still need whole-word
filtering for Latin, and would be one more index to keep exact across truncate,
revert and redaction. The scan reads HEAD (one indexed query) and scores cached
per-text word sets: ``python -m chronobench bench adk`` measures it at 1k and 10k
memories (about 100 ms at 10k on two shared cores, half of it reading HEAD).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

_WORD = re.compile(r"\w+")

# Scripts written without spaces between words: substring matching is the only way
# a user's word can be found inside them.
_UNSPACED = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x20000, 0x3134F),  # CJK extensions B-G
)


def _unspaced(ch: str) -> bool:
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _UNSPACED)


def _script(ch: str) -> int:
    """0: Latin letters and ASCII digits, 1: unspaced scripts, 2: anything else."""
    if ch.isascii():
        return 0
    if _unspaced(ch):
        return 1
    return 0 if unicodedata.name(ch, "").startswith("LATIN") else 2


def normalise(text: str) -> str:
    """NFC, case-folded, NFC again (case folding can decompose, e.g. "İ")."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


def words(text: str) -> set[str]:
    """The words of ``text`` (normalised), plus the single-script runs of mixed tokens."""
    out: set[str] = set()
    # Split script runs before case folding: folding "İ" yields a combining mark that
    # would otherwise cut the word in two.
    for token in _WORD.findall(unicodedata.normalize("NFC", text)):
        out.add(normalise(token))
        if not token.isascii():
            for _, run in itertools.groupby(token, _script):
                out.add(normalise("".join(run)))
    out.discard("")
    return out


@dataclass(frozen=True)
class Query:
    """A search query split into whole-word terms and substring terms."""

    whole: frozenset[str]
    substring: frozenset[str]

    def __bool__(self) -> bool:
        return bool(self.whole or self.substring)


def parse_query(query: str) -> Query:
    """Split ``query`` into words; words with an unspaced-script character match as substrings."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    whole, sub = set(), set()
    for token in _WORD.findall(unicodedata.normalize("NFC", query)):
        # A mixed-script token counts as its single-script runs ("Pythonを" is "python"
        # and "を"), so one query word is not counted twice.
        runs = (
            [token]
            if token.isascii()
            else ["".join(r) for _, r in itertools.groupby(token, _script)]
        )
        for run in runs:
            w = normalise(run)
            if w:
                (sub if any(_unspaced(c) for c in w) else whole).add(w)
    return Query(frozenset(whole), frozenset(sub))


class MatchIndex:
    """Per-text word sets, cached by text so repeated searches over HEAD re-tokenise nothing.

    The cache is bounded (cleared when full); entries are only ever used for texts that
    are in the current snapshot, so a redacted text is never returned from it.
    """

    def __init__(self, max_entries: int = 200_000) -> None:
        self.max_entries = max_entries
        self._cache: dict[str, tuple[frozenset[str], str]] = {}

    def _entry(self, text: str) -> tuple[frozenset[str], str]:
        hit = self._cache.get(text)
        if hit is None:
            if len(self._cache) >= self.max_entries:
                self._cache.clear()
            hit = (frozenset(words(text)), normalise(text))
            self._cache[text] = hit
        return hit

    def score(self, query: Query, text: str) -> int:
        """Distinct query words found in ``text``."""
        wset, norm = self._entry(text)
        n = len(query.whole & wset) if query.whole else 0
        return n + sum(1 for s in query.substring if s in norm)

    def rank(self, query: Query, texts: Sequence[str], limit: int) -> list[int]:
        """Indexes of the best ``limit`` texts (most words matched; ties keep input order)."""
        if not query or limit <= 0:
            return []
        scored = [(s, i) for i, t in enumerate(texts) if (s := self.score(query, t)) > 0]
        scored.sort(key=lambda si: -si[0])  # stable: equal scores stay in input order
        return [i for _, i in scored[:limit]]

    def forget(self) -> None:
        """Drop every cached entry."""
        self._cache.clear()
