"""Anchor uniqueness from the dataset's own annotations: does an anchor describe one
episode and no other?

The anchor-vs-anchor filter in :mod:`data_builders.queries` only compares anchors with
each other, so an anchor about a camping trip passes although camping comes up in seven
sessions. This filter asks the dataset's annotations instead of what systems index. For
LoCoMo an episode's *annotation records* are the statements annotators attached to it:
its ``event_summary`` lines, its ``observation`` records and the ``qa`` questions whose
evidence cites it (a record citing several turns or sessions belongs to each of them).

An anchor's *key terms* are its phrase's content words (lower-cased, stop words removed,
light suffix folding so "camping" meets "camped"). Each term is weighted by how rare it
is among the conversation's sessions' records, ``log(n_sessions / sessions_with_term)``,
so a speaker's name or "family" weighs almost nothing and "Perseid" a lot. An anchor is
dropped when

- one record of another episode covers at least ``share`` of its key-term weight
  (``annotation_recurs``: annotators said the same thing about another episode), or
- its key terms weigh less than ``min_weight`` in all (``annotation_too_generic``:
  nothing in it is rare enough to single out an episode), or
- its hidden source text occurs verbatim in what systems index
  (``verbatim_in_index``: the leakage guard of data_builders/README.md).

Why this and not a retrieval score: the filter must share nothing with any selector, or
the template requests it keeps are the ones that selector already gets right. It never
reads the indexed text (apart from the verbatim guard, a containment test that ranks
nothing), never builds a search index and uses no selector, embedding or BM25 code.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from chronobench.text import content_word_set
from data_builders.queries import Anchor

DEFAULT_SHARE = 0.4
DEFAULT_MIN_WEIGHT = 1.0
_FOLD = (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))


def fold(word: str) -> str:
    """Light suffix folding ("camping", "camped", "camps" -> "camp"); deliberately not a
    search engine's stemmer, so the filter shares no tokenisation with a selector."""
    for suffix, repl in _FOLD:
        stem = len(word) - len(suffix)
        if word.endswith(suffix) and stem >= 3 and not (suffix == "s" and word.endswith("ss")):
            word = word[:stem] + repl
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def key_terms(text: str) -> frozenset[str]:
    """Folded content words of ``text``."""
    return frozenset(fold(w) for w in content_word_set(text))


@dataclass
class AnnotationIndex:
    """Annotation records (as key-term sets) per episode key, and term weights."""

    records: dict[str, list[frozenset[str]]] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)

    def add(self, keys: Iterable[str], text: str) -> None:
        """Attach one annotation statement to every episode in ``keys``."""
        terms = key_terms(text)
        for k in dict.fromkeys(keys):
            self.records.setdefault(k, []).append(terms)

    def weigh(self, units: Mapping[str, Iterable[frozenset[str]]]) -> None:
        """Set term weights to ``log(n_units / units_with_term)`` over ``units``."""
        df: Counter[str] = Counter()
        for recs in units.values():
            df.update(set().union(*recs) if recs else set())
        n = max(len(units), 1)
        self.weights = {t: math.log(n / c) for t, c in df.items()}

    def rival_share(self, terms: frozenset[str], own: set[str]) -> tuple[float, float]:
        """``(total key-term weight, largest share of it one record of another episode
        covers)``; terms no annotation uses carry no weight."""
        w = self.weights
        total = sum(w.get(t, 0.0) for t in terms)
        if total <= 0.0:
            return 0.0, 0.0
        best = max(
            (
                sum(w.get(t, 0.0) for t in terms & rec)
                for key, recs in self.records.items()
                if key not in own
                for rec in recs
            ),
            default=0.0,
        )
        return total, best / total


def annotation_verdict(
    total: float, share: float, *, max_share: float, min_weight: float
) -> str | None:
    """Why an anchor is not unique by its annotations, or None when it is."""
    if total < min_weight:
        return "annotation_too_generic"
    if share >= max_share:
        return "annotation_recurs"
    return None


def filter_by_annotations(
    anchors: list[Anchor],
    indexes: Mapping[str, tuple[AnnotationIndex, Callable[[Anchor], set[str]]]],
    *,
    indexed_text: str = "",
    share: float = DEFAULT_SHARE,
    min_weight: float = DEFAULT_MIN_WEIGHT,
) -> tuple[list[Anchor], Counter[str]]:
    """Keep the anchors whose annotations tie them to one episode.

    ``indexes`` maps an anchor scope to ``(index, own)``, where ``own(anchor)`` is the set
    of episode keys the anchor belongs to; anchors of a scope without an index are kept.
    ``indexed_text`` is everything systems index (for the verbatim guard only).
    Returns the kept anchors and drop counts by reason.
    """
    if not 0.0 < share <= 1.0:
        raise ValueError(f"annotation share must be in (0, 1], got {share!r}")
    if min_weight < 0.0:
        raise ValueError(f"annotation min_weight must be >= 0, got {min_weight!r}")
    haystack = indexed_text.lower()
    drops: Counter[str] = Counter()
    kept: list[Anchor] = []
    for a in anchors:
        needle = a.text.lower().strip().rstrip(".")
        if needle and needle in haystack:  # the hidden source text must not be quoted
            drops[f"{a.kind}:verbatim_in_index"] += 1
            continue
        entry = indexes.get(a.scope)
        if entry is None:
            kept.append(a)
            continue
        index, own = entry
        total, best = index.rival_share(key_terms(a.phrase), own(a))
        why = annotation_verdict(total, best, max_share=share, min_weight=min_weight)
        if why:
            drops[f"{a.kind}:{why}"] += 1
        else:
            kept.append(a)
    return kept, drops


_DIA = re.compile(r"^D(\d+):\d+$")


def session_of(dia_id: str) -> int | None:
    """Session number of a LoCoMo dialogue id (``D12:4`` -> 12), None when malformed."""
    m = _DIA.match(dia_id)
    return int(m.group(1)) if m else None
