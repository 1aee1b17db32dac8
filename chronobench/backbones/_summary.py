"""The extractive reader's summary under a word budget ("... in at most 150 words").

A budgeted summary has to cover the history it is given, not fill the budget with one
part of it: the reader groups sentences by their passage date (a LoCoMo session; a
passage without a date is its own group), ranks each group's sentences by specificity
(summed idf of their content terms over the square root of their length, so a sentence
naming rare things beats small talk), and takes the best sentence of each group in an
order that spreads over the timeline: the latest group first, then the earliest, then
the midpoints between groups already taken. When every group has one sentence it goes
round again with each group's next best. A sentence that does not fit the budget is
skipped; the chosen sentences are printed in timeline order.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from chronobench.backbones._spans import split_sentences, terms, words
from chronobench.metrics.text import ABSTAIN_TEXT

__all__ = ["budget_summary", "spread_order"]

#: Sentences with fewer content terms are small talk ("Wow, thanks!"), never chosen.
MIN_TERMS = 3


def spread_order(k: int) -> list[int]:
    """``0 .. k-1`` ordered so that every prefix spreads over the range: ``k-1``, ``0``,
    then the midpoints of the gaps left, breadth first."""
    if k <= 0:
        return []
    out = [k - 1] + ([0] if k > 1 else [])
    gaps = [(0, k - 1)]
    while gaps:
        nxt = []
        for a, b in gaps:
            if b - a > 1:
                m = (a + b) // 2
                out.append(m)
                nxt += [(a, m), (m, b)]
        gaps = nxt
    return out


def budget_summary(context: Sequence[str], budget: int) -> str:
    """At most ``budget`` words of ``context`` sentences (see the module docstring)."""
    sentences = [s for s in split_sentences(tuple(context)) if len(terms(s.text)) >= MIN_TERMS]
    if not sentences or budget < 1:
        return ABSTAIN_TEXT
    n = len(sentences)
    df = Counter(t for s in sentences for t in set(terms(s.text)))

    def specificity(i: int) -> float:
        text = sentences[i].text
        # fsum: a set's order follows the process's string hash seed, and a plain sum in
        # another order can differ in the last bit, enough to reorder two tied sentences
        # (one summary of the main job's 12,322 probes changed between processes).
        idf = math.fsum(math.log(1 + n / df[t]) for t in set(terms(text)))
        return idf / math.sqrt(len(words(text)))

    groups: dict[object, list[int]] = {}
    for i, s in enumerate(sentences):
        key = s.passage_date or s.passage_date_text or ("passage", s.passage_index)
        groups.setdefault(key, []).append(i)
    ranked = [sorted(g, key=lambda i: (-specificity(i), i)) for g in groups.values()]
    chosen: list[int] = []
    used = 0
    for depth in range(max(len(r) for r in ranked)):
        for g in spread_order(len(ranked)):
            if depth >= len(ranked[g]):
                continue
            i = ranked[g][depth]
            size = len(sentences[i].text.split())
            if used + size <= budget:
                chosen.append(i)
                used += size
    if not chosen:  # every sentence is longer than the budget: cut the best one
        best = max(range(n), key=lambda i: (specificity(i), -i))
        return " ".join(sentences[best].text.split()[:budget])
    return " ".join(sentences[i].text for i in sorted(chosen))
