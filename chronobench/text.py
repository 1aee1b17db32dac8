"""Text utilities shared across the package: normalisation, stemming, word sets and the
named stopword lists.

Bottom layer: imports nothing from chronobench (nltk is imported on first :func:`stem`).

There are three stopword lists here, not one, on purpose (and ChronoMem keeps its own,
``chronomem.words.RETRIEVAL_STOPWORDS``, the words it drops from a rollback request): each
is part of the definition of what uses it, and merging any two would move a published
figure or a built dataset's bytes (each pair differs by 4 to 125 words).

- :data:`CONTENT_STOPWORDS`: RQ3's content ROUGE-1 and calibrated summary leakage, and
  the category-3 "future" probe test (docs/metrics.md).
- :data:`READER_STOPWORDS`: the extractive reader's question terms (function words,
  question words and chat fillers such as "oh", "gonna").
- :data:`BUILDER_STOPWORDS`: the dataset builders' near-duplicate filter for rollback
  query phrases and the MemoryAgentBench name anchors.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from typing import Any

__all__ = [
    "BUILDER_STOPWORDS",
    "CONTENT_STOPWORDS",
    "MONTHS",
    "READER_STOPWORDS",
    "contains_phrase",
    "content_word_set",
    "date_like",
    "jaccard",
    "normalize",
    "first_words",
    "stem",
    "word_budget",
    "words",
]


def words(text: str) -> list[str]:
    """Whitespace-separated words of a literal (keeps long word lists readable)."""
    return text.split()


# A standard English function-word list (articles, pronouns, auxiliaries, prepositions,
# conjunctions, common adverbs), written out here so scores do not move with a library's
# list. Apostrophes are dropped before lookup, hence "dont", "im", "shes".
CONTENT_STOPWORDS = frozenset(
    words(
        """
    a about above after again against all also am an and any are arent as at be because
    been before being below between both but by can cannot cant could couldnt did didnt do
    does doesnt doing dont down during each even ever every few for from further get gets
    got had hadnt has hasnt have havent having he hed hell hes her here heres hers herself
    him himself his how hows i id ill im ive if in into is isnt it its itself just lets
    like me more most much must mustnt my myself no nor not now of off on once only or
    other ought our ours ourselves out over own quite rather really same shant she shed
    shell shes should shouldnt so some such than that thats the their theirs them
    themselves then there theres these they theyd theyll theyre theyve this those through
    thus to too under until up upon us very was wasnt we wed well were weve werent what
    whats when whens where wheres whether which while who whos whom why whys will with
    within without wont would wouldnt yet you youd youll youre youve your yours yourself
    yourselves s t also one ones thing things lot lots way ways really
    """
    )
)

# Function words and question words: matching them says nothing about relevance.
READER_STOPWORDS = frozenset(
    words(
        "a about above after again all am an and any are as at be because been before being "
        "below between both but by can could did do does doing down during each few for from "
        "further had has have having he her here hers herself him himself his how i if in "
        "into is it its itself just me more most my myself no nor not now of off on once only "
        "or other our ours out over own same she should so some such than that the their "
        "theirs them then there these they this those through to too under until up very was "
        "we were what when where which while who whom whose why will with would you your "
        "yours im ive id youre its thats dont didnt oh yeah hey hi wow really also got get "
        "like lot lots well much many kind sort thing things one ones think know going go "
        "went gonna wanna us let lets"
    )
)

BUILDER_STOPWORDS = frozenset(
    words(
        """a an the and or but of to in on at for with from by about as into over after before
    is are was were be been being am do does did has have had will would can could should
    her his their its our my your he she they it we you i me him them us this that these
    those there here what when where why how who whom which whether not no yes so too very
    just also up out off then than some any all more most other such own same s t"""
    )
)

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)


# Memoised: the dataset builders normalise the same history prefixes and answers again
# for every request that points into them.
@lru_cache(maxsize=8192)
def normalize(text: str) -> str:
    """LoCoMo-style normalisation: lowercase, no commas/punctuation/articles, single spaces.

    Words are split on whitespace, so it can differ from the QA metric's regex-based
    :func:`chronobench.metrics.text.normalize_answer` on non-ASCII punctuation; the built
    datasets depend on this form.
    """
    text = text.replace(",", "").lower().translate(_PUNCT_TABLE)
    kept = [w for w in text.split() if w not in ("a", "an", "the", "and")]
    return " ".join(kept)


def contains_phrase(haystack_norm: str, needle_norm: str) -> bool:
    """Whole-word containment of one normalised string in another."""
    if not needle_norm:
        return False
    return f" {needle_norm} " in f" {haystack_norm} "


_STEMMER: Any = None


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """nltk Porter stem of ``word`` (cached: stemming dominates scoring time)."""
    global _STEMMER
    if _STEMMER is None:
        # Importing nltk costs seconds (it pulls in scipy and more): pay it on first use.
        from nltk.stem import PorterStemmer

        _STEMMER = PorterStemmer()
    return _STEMMER.stem(word)


def content_word_set(text: str) -> frozenset[str]:
    """Lower-cased alphanumeric words of ``text`` without :data:`BUILDER_STOPWORDS` and
    one-letter words ("'s" dropped first): what the builders compare phrases by."""
    found = re.findall(r"[a-z0-9]+", text.lower().replace("'s", ""))
    return frozenset(w for w in found if w not in BUILDER_STOPWORDS and len(w) > 1)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two word sets (0 when both are empty)."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


MONTHS = words(
    "January February March April May June July August September October November December"
)
_MONTH_ABBR = [m[:3] for m in MONTHS] + ["Sept"]
# Capitalised month names (and common abbreviations) count as dates in query text;
# "may" in lower case is the modal verb and is allowed.
_MONTH_RE = re.compile(r"\b(?:" + "|".join(MONTHS + _MONTH_ABBR) + r")\b\.?")
_DIGIT_RE = re.compile(r"\d")


def date_like(text: str) -> str | None:
    """Why ``text`` may not appear in a rollback query ("digits" or "date_words"), else
    None. Any digit is refused: it could read as a date, a session number or a dialog id.
    """
    if _DIGIT_RE.search(text):
        return "digits"
    if _MONTH_RE.search(text):
        return "date_words"
    return None


# "Summarise ... in at most 150 words." (how a summary probe states its budget).
_BUDGET_RE = re.compile(r"\bin (?:at most|no more than|under) (\d{1,5}) words\b", re.IGNORECASE)


def word_budget(text: str) -> int | None:
    """The word budget a request states ("in at most 150 words"), or None."""
    m = _BUDGET_RE.search(text)
    return int(m.group(1)) if m and int(m.group(1)) > 0 else None


def first_words(text: str, n: int) -> str:
    """The first ``n`` whitespace-separated words of ``text``, joined by single spaces."""
    return " ".join(text.split()[:n])
