"""Long_Range_Understanding anchors: names that first appear in a chunk.

These anchors come from indexed text (the book has no separate annotation); the
manifest records this caveat.
"""

from __future__ import annotations

import re
from collections import Counter

from chronobench.data.schema import Stream
from chronobench.text import BUILDER_STOPWORDS, words
from data_builders.queries import Anchor

_CAP = re.compile(r"(?<=[a-z,;] )([A-Z][a-z]{2,})\b")
_COMMON = frozenset(
    words(
        """Mr Mrs Miss Sir Lady Lord God Chapter Book Part The And But Then When What Where
        Monday Tuesday Wednesday Thursday Friday Saturday Sunday English French"""
    )
)


def name_anchors(stream: Stream, *, min_mentions: int = 3) -> list[Anchor]:
    """One anchor per chunk: the most mentioned name whose first mention is in that chunk."""
    texts = [" ".join(op.text or "" for op in w.ops) for w in stream.writes]
    mentions: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for v, text in enumerate(texts, start=1):
        for name in _CAP.findall(text):
            if name in _COMMON or name.lower() in BUILDER_STOPWORDS:
                continue
            mentions[name] += 1
            first_seen.setdefault(name, v)
    best: dict[int, str] = {}
    for name, v in sorted(first_seen.items()):
        if mentions[name] < min_mentions:
            continue
        if v not in best or mentions[name] > mentions[best[v]]:
            best[v] = name
    return [
        Anchor(
            anchor_id=f"name-v{v}",
            kind="passage",
            text=name,
            phrase=f"{name} first appears",
            form="clause",
            scope="passage",
            group=f"v{v}",
            anchor_version=v,
            restore_version=v,
            undo_version=v - 1,
            family="first-appearance",  # distinct names by construction, not rivals
        )
        for v, name in sorted(best.items())
    ]
