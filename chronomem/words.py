"""The words ChronoMem drops from a request before matching, and the stemmer its backbone
resolver compares excerpts with.

Standard library only; nltk is imported on the first :func:`stem` (only the backbone
resolver stems, so a store without one never needs it).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["RETRIEVAL_STOPWORDS", "stem"]

# Written out rather than taken from a library, so rankings do not move with its list.
# Keeps "after", "before", "more": they carry a rollback request's direction.
RETRIEVAL_STOPWORDS = frozenset(
    """a an the and or but if then of to in on at by for with from about as into is are was
    were be been being am do does did i me my mine we our you your he him his she her it its
    they them their this that these those there here what which who whom when where how
    please can could would should will shall may might must just also so very not no
    have has had get got all any some""".split()
)

_STEMMER: Any = None


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """nltk's Porter stem of ``word`` (cached: stemming dominates the resolver's scoring)."""
    global _STEMMER
    if _STEMMER is None:
        try:
            from nltk.stem import PorterStemmer
        except ImportError as exc:
            raise ImportError(
                "ChronoMem's backbone resolver stems words with nltk: "
                "pip install 'chronomem[resolver]' (or pip install nltk)"
            ) from exc
        _STEMMER = PorterStemmer()
    return _STEMMER.stem(word)
