"""Content words: what is left of a text once names, dates, numbers and stopwords go.

RQ3's content ROUGE-1 and calibrated summary leakage (docs/metrics.md) compare only
these, so a list of dates, the speakers' names or frequent function words earn nothing.
Words are lower-cased alphabetic runs (apostrophes dropped: "don't" -> "dont"); stems
are nltk's Porter stems, as LoCoMo's QA scoring uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from chronobench.metrics.text import stem

__all__ = ["CONTENT_STOPWORDS", "DATE_WORDS", "content_stems", "content_text", "content_words"]

# A standard English function-word list (articles, pronouns, auxiliaries, prepositions,
# conjunctions, common adverbs), written out here so scores do not move with a library's
# list. Apostrophes are dropped before lookup, hence "dont", "im", "shes".
CONTENT_STOPWORDS = frozenset(
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
    """.split()
)

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
    drop = _name_words(names)
    out: list[str] = []
    for raw in _WORD_RE.findall(text.lower()):
        word = raw[:-2] if raw.endswith("'s") else raw
        word = word.replace("'", "")
        if (
            len(word) < 2
            or any(c.isdigit() for c in word)
            or word in CONTENT_STOPWORDS
            or word in DATE_WORDS
            or word in drop
        ):
            continue
        out.append(word)
    return out


def content_text(text: str, names: Iterable[str] = ()) -> str:
    """:func:`content_words` joined by spaces (what content ROUGE-1 scores)."""
    return " ".join(content_words(text, names))


def content_stems(text: str, names: Iterable[str] = ()) -> set[str]:
    """The set of Porter stems of :func:`content_words`."""
    return {stem(w) for w in content_words(text, names)}
