"""Answer normalisation and token overlap, as LoCoMo's own evaluation defines them.

The rules (metrics.md): drop commas, lowercase, strip ASCII punctuation, drop the
words a / an / the / and, collapse whitespace; F1 is computed over Porter-stemmed
tokens of the normalised strings; exact match compares *sets* of normalised tokens.
"""

from __future__ import annotations

import re
import string
from collections import Counter

from chronobench.text import stem

__all__ = [
    "ABSTAIN_PHRASES",
    "ABSTAIN_TEXT",
    "ABSTAIN_WHOLE",
    "exact_match",
    "is_abstention",
    "normalize_answer",
    "stemmed_tokens",
    "token_f1",
]

#: What a backbone or system answers when it abstains. It contains one of the
#: category-5 phrases, so LoCoMo's own rule already counts it as an abstention.
ABSTAIN_TEXT = "Not mentioned."

#: Abstain forms that count wherever they occur in the normalised prediction (whole
#: words, after :func:`normalize_answer`, so "I don't know." is "i dont know"). The first
#: two are LoCoMo's own category-5 phrases; the rest are how readers and LLMs say the
#: same thing. Every entry is a phrase that does not occur inside a LoCoMo gold answer.
ABSTAIN_PHRASES: tuple[str, ...] = (
    "not mentioned",
    "no information",
    "never mentioned",
    "no mention",
    "not enough information",
    "insufficient information",
    "no relevant information",
    "i dont know",
    "i do not know",
    "cannot answer",
    "can not answer",
    "cant answer",
    "unable to answer",
    "cannot be determined",
    "cannot determine",
    "not stated",
    "not specified",
    "not in memory",
    "memory is empty",
    "memory does not contain",
)

#: Abstain forms that count only as the *whole* normalised prediction: as a word inside
#: an answer they are content ("the sender is unknown", "an unknown artist").
ABSTAIN_WHOLE: tuple[str, ...] = (
    "unknown",
    "unclear",
    "not sure",
    "no idea",
    "unanswerable",
    "na",
    "none",
)

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


def normalize_answer(text: str) -> str:
    """Normalise an answer string the LoCoMo way (see module docstring)."""
    text = text.replace(",", "").lower().translate(_PUNCT_TABLE)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def stemmed_tokens(text: str) -> list[str]:
    """Porter-stemmed tokens (:func:`chronobench.text.stem`) of the normalised ``text``."""
    return [stem(w) for w in normalize_answer(text).split()]


def token_f1(prediction: str, gold: str) -> float:
    """Token F1 between stemmed normalised tokens; 0.0 when nothing overlaps."""
    pred = stemmed_tokens(prediction)
    ref = stemmed_tokens(gold)
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(ref)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the sets of normalised (unstemmed) tokens are equal, else 0.0."""
    return float(set(normalize_answer(prediction).split()) == set(normalize_answer(gold).split()))


_PHRASE_RE = re.compile(r"\b(?:" + "|".join(re.escape(p) for p in ABSTAIN_PHRASES) + r")\b")


def is_abstention(prediction: str, marker: str | None = None) -> bool:
    """True when ``prediction`` abstains.

    Normalised the LoCoMo way, the prediction abstains when it contains one of
    :data:`ABSTAIN_PHRASES` as whole words, or *is* one of :data:`ABSTAIN_WHOLE`, or
    contains ``marker`` (a system's own abstain reply, normalised the same way).
    """
    norm = normalize_answer(prediction)
    if not norm:
        return False
    if norm in ABSTAIN_WHOLE or _PHRASE_RE.search(norm):
        return True
    if marker:
        mark = normalize_answer(marker)
        return bool(mark) and re.search(r"\b" + re.escape(mark) + r"\b", norm) is not None
    return False
