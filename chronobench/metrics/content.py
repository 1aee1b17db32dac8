"""Content words: what is left of a text once names, dates, numbers and stopwords go.

RQ3's content ROUGE-1 and calibrated summary leakage (docs/metrics.md) compare only
these, so a list of dates, the speakers' names or frequent function words earn nothing.
Words are lower-cased alphabetic runs (apostrophes dropped: "don't" -> "dont"); stems
are nltk's Porter stems, as LoCoMo's QA scoring uses. The stopword list is
:data:`chronobench.text.CONTENT_STOPWORDS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from chronobench.text import CONTENT_STOPWORDS, stem

__all__ = ["DATE_WORDS", "content_stems", "content_text", "content_words"]

#: Calendar words: a date is "7 May 2023", "May", "Tuesday", "pm"; numbers are dropped
#: separately (any token with a digit).
DATE_WORDS = frozenset(
    """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday
    friday saturday sunday am pm
    """.split()
)

_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _name_words(names: Iterable[str]) -> frozenset[str]:
    out: set[str] = set()
    for name in names:
        out.update(w.replace("'", "") for w in _WORD_RE.findall(name.lower()))
    return frozenset(out)


def content_words(text: str, names: Iterable[str] = ()) -> list[str]:
    """Lower-cased content words of ``text`` in order: stopwords, ``names`` (any word of
    them, so "Caroline's" goes with "Caroline"), calendar words and anything holding a
    digit are removed; possessive "'s" is dropped first."""
    return list(_content_words(text, _name_words(names)))


# Memoised: building the probes of a request file reads the same session texts for many
# requests (62k calls, 49 s, for the main job's seven files before this cache).
@lru_cache(maxsize=16384)
def _content_words(text: str, drop: frozenset[str]) -> tuple[str, ...]:
    out: list[str] = []
    for raw in _WORD_RE.findall(text.lower()):
        word = raw[:-2] if raw.endswith("'s") else raw
        word = word.replace("'", "")
        if (
            len(word) < 2
            or not word.isalpha()  # the pattern leaves [a-z0-9] only: a digit is there
            or word in CONTENT_STOPWORDS
            or word in DATE_WORDS
            or word in drop
        ):
            continue
        out.append(word)
    return tuple(out)


def content_text(text: str, names: Iterable[str] = ()) -> str:
    """:func:`content_words` joined by spaces (what content ROUGE-1 scores)."""
    return " ".join(content_words(text, names))


def content_stems(text: str, names: Iterable[str] = ()) -> set[str]:
    """The set of Porter stems of :func:`content_words`."""
    return set(_content_stems(text, _name_words(names)))


@lru_cache(maxsize=16384)
def _content_stems(text: str, drop: frozenset[str]) -> frozenset[str]:
    return frozenset(stem(w) for w in _content_words(text, drop))
