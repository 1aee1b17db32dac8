"""Retrieval-driven reads (builder ``repair-6``, sets ``retrieval_controlled`` and
``retrieval_stress``).

On the earlier sets every read the agent makes is stated by the log: a note reads its
slot, a lookup its tool's argument slot, and the agent takes the newest record stating
the slot, a rule a planner can replay on ChronoMem's versions. A deployed memory agent
reads what retrieval returns instead: it issues a search query, gets the top ``k``
records by embedding similarity, and answers from those. Its log keeps the user's
message and the query it issued, not the records retrieval returned; those are in the
store's provenance (the ``cite`` edges of the step), which is what the dependency graph
is built from.

Here a session whose log entry carries a ``query`` (notes and advisory lookups on the
retrieval sets) is shown the :data:`TOP_K` records most similar to the query under
ChronoMem's hash embedder (bag of hashed words: near-duplicates score alike, a
paraphrased note that never names the slot scores low), and the agent takes the newest
of those that states the slot. Nothing else about the agent changes.

:func:`lexical_top` is what a planner without the retriever can do from the log: rank
the records of the state by the words they share with the logged query.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

__all__ = ["RETRIEVAL_SETS", "TOP_K", "lexical_top", "retrieve", "retrieves"]

RETRIEVAL_SETS = ("retrieval_controlled", "retrieval_stress")
# A small top-k, as memory agents use; fixed before anything was measured on these sets.
TOP_K = 3
_WORD = re.compile(r"[a-z0-9]+")


def retrieves(ev: Mapping[str, Any]) -> bool:
    """Whether session ``ev`` reads memory through retrieval (its log entry has a query)."""
    return bool(ev.get("query"))


def _words(text: str) -> str:
    # Slot names are stored as ``delivery_city``; an embedder reads them as two words.
    return " ".join(_WORD.findall(text.lower().replace("_", " ")))


@cache
def _embedder() -> Any:
    from chronomem.embedding_models import HashEmbedder

    return HashEmbedder()


def retrieve(items: Mapping[str, str], query: str, k: int = TOP_K) -> list[str]:
    """The ``k`` items of ``items`` whose text is most similar to ``query`` (cosine of
    hash-embedder vectors; on a tie the newer item first), in store order."""
    if not items:
        return []
    keys = list(items)
    vecs = _embedder().encode([_words(query)] + [_words(items[i]) for i in keys])
    scores = vecs[1:] @ vecs[0]
    ranked = sorted(range(len(keys)), key=lambda n: (-round(float(scores[n]), 6), -n))
    top = set(ranked[:k])
    return [keys[n] for n in range(len(keys)) if n in top]


def lexical_top(items: Mapping[str, str], query: str, k: int = TOP_K) -> list[str]:
    """The ``k`` items sharing the most distinct words with ``query`` (on a tie the newer
    first), in store order: a planner's guess at what retrieval returned, made from the
    logged query without the retriever."""
    q = set(_words(query).split())
    keys = list(items)
    overlap = [len(q & set(_words(items[i]).split())) for i in keys]
    ranked = sorted(range(len(keys)), key=lambda n: (-overlap[n], -n))
    top = set(ranked[:k])
    return [keys[n] for n in range(len(keys)) if n in top]
