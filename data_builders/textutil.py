"""Small text helpers shared by the builders: hashing, normalisation, date-like checks."""

from __future__ import annotations

import re
import string

from chronobench.data.text import contains_phrase, normalize, stable_hash  # noqa: F401 (re-exported)


def words(text: str) -> list[str]:
    """Whitespace-separated words of a literal (keeps long word lists readable)."""
    return text.split()


MONTHS = words(
    "January February March April May June July August September October November December"
)
_MONTH_ABBR = [m[:3] for m in MONTHS] + ["Sept"]
# Capitalised month names (and common abbreviations) count as dates in query text;
# "may" in lower case is the modal verb and is allowed.
_MONTH_RE = re.compile(r"\b(?:" + "|".join(MONTHS + _MONTH_ABBR) + r")\b\.?")
_DIGIT_RE = re.compile(r"\d")

STOPWORDS = frozenset(
    words(
        """a an the and or but of to in on at for with from by about as into over after before
    is are was were be been being am do does did has have had will would can could should
    her his their its our my your he she they it we you i me him them us this that these
    those there here what when where why how who whom which whether not no yes so too very
    just also up out off then than some any all more most other such own same s t"""
    )
)

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)


def pick(options: list[str] | tuple[str, ...], *key: object) -> str:
    """Choose one option deterministically from a key."""
    return options[stable_hash(*key) % len(options)]


def content_words(text: str) -> frozenset[str]:
    """Lower-cased content words (stop words and pure punctuation removed)."""
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'s", ""))
    return frozenset(w for w in words if w not in STOPWORDS and len(w) > 1)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two word sets (0 when both are empty)."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def date_like(text: str) -> str | None:
    """Return why ``text`` may not appear in a query (a digit or a month name), else None.

    Any digit is refused: it could read as a date, a session number or a dialog id.
    """
    if _DIGIT_RE.search(text):
        return "digits"
    if _MONTH_RE.search(text):
        return "date_words"
    return None
