"""The extractive reader's sentence index and its scores: sentences with their term sets,
postings, BM25 idf and IDF-weighted coverage (memoised per context: systems that show
the same memory for many questions pay for it once)."""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache
from typing import Any

from chronobench.backbones._spans import Sentence, split_sentences, terms


def term_idf(q_terms: set[str], n: int, df: Counter[str]) -> tuple[dict[str, float], float]:
    """BM25 idf of each question term over ``n`` sentences, and their sum."""
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in q_terms}
    # fsum: a set's order follows the process's string hash seed, and a plain float sum
    # in another order can differ in the last bit, enough to flip a tie or a threshold.
    return idf, math.fsum(idf.values())


def covered_share(idf: dict[str, float], matched: frozenset[str] | set[str], total: float) -> float:
    """Share of the question's idf mass that ``matched`` covers (order-independent sum:
    two sentences covering the same terms tie exactly, whatever their sets' order)."""
    return math.fsum(idf[t] for t in matched) / total


@lru_cache(maxsize=16)
def indexed_context(
    context: tuple[str, ...],
) -> tuple[list[Sentence], list[frozenset[str]], Counter[str]]:
    """Sentences of a context with their term sets and document frequencies. Memoised:
    systems that show the same memory for many probes (full history) pay for it once."""
    sentences = split_sentences(context)
    sent_terms = [frozenset(terms(s.header + " " + s.text)) for s in sentences]
    df = Counter(t for ts in sent_terms for t in ts)
    return sentences, sent_terms, df


@lru_cache(maxsize=16)
def term_postings(context: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """Term -> indices of the context's sentences holding it (see :func:`indexed_context`)."""
    out: dict[str, list[int]] = {}
    for i, ts in enumerate(indexed_context(context)[1]):
        for t in ts:
            out.setdefault(t, []).append(i)
    return {t: tuple(v) for t, v in out.items()}


def last_uncovered(covered: dict[int, Any], typed: tuple[bool, ...]) -> list[int]:
    """The last sentence not in ``covered`` (those holding a question term) among the
    typed ones and among the others (at most two indices)."""
    found: dict[bool, int] = {}
    for i in range(len(typed) - 1, -1, -1):
        if i not in covered and typed[i] not in found:
            found[typed[i]] = i
            if len(found) == 2:
                break
    return sorted(found.values())


def cosine_sim(a: dict[str, float], b: dict[str, float], nb: float | None = None) -> float:
    dot = sum(v * b.get(t, 0.0) for t, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    if nb is None:
        nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb) if na and nb else 0.0
