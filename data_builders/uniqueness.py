"""Episode uniqueness: does an anchor point at its own episode more than at any other?

The anchor-vs-anchor filter in :mod:`data_builders.queries` only compares anchors with
each other, so an anchor about a parade passes although parades come up in four
sessions. This filter scores every anchor against the *indexed text* of every episode
of its stream (what a system sees) with SQLite FTS5 BM25 and drops the anchor when

- its own episode is not the top match (``episode:not_top``), or
- the best other episode scores at least ``margin`` times its own episode
  (``episode:runner_up_close``), or
- its hidden source text occurs verbatim in an episode (``episode:verbatim_in_index``:
  the leakage guard of data_builders/README.md).

An anchor none of whose content words occurs in any episode is kept and counted apart
(lexical evidence cannot call it ambiguous). Episode text is tokenised with FTS5's
porter stemmer, so "attends" in an anchor meets "attended" in a turn.

Episodes are the unit the query names: a session for ``scope="session"`` anchors, a
single write for ``scope="write"`` anchors (so at turn granularity a message-level
anchor competes with every other message, including those of its own session).

Why BM25 and a ratio: BM25 is what the benchmark's own lexical selector uses, so an
anchor that survives is one whose words favour its episode under the same scoring a
reader of the conversation would apply by skimming for the words; a ratio makes the
margin independent of the query length. ``DEFAULT_MARGIN`` = 0.8 (the runner-up must
score below 80% of the own episode); see data_builders/README.md for the drop counts.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chronobench.text import content_word_set
from data_builders.queries import Anchor

DEFAULT_MARGIN = 0.8


@dataclass(frozen=True)
class Episode:
    """One unit a query may name: its id (``s3`` or ``v17``) and its indexed text."""

    key: str
    text: str


class EpisodeIndex:
    """An in-memory FTS5 index over a stream's episodes, scored with BM25."""

    def __init__(self, episodes: Sequence[Episode]) -> None:
        self.keys = [e.key for e in episodes]
        self.lowered = [e.text.lower() for e in episodes]
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE ep USING fts5(body, tokenize='porter unicode61')")
        self.conn.executemany(
            "INSERT INTO ep(rowid, body) VALUES (?, ?)",
            [(i + 1, e.text) for i, e in enumerate(episodes)],
        )

    def scores(self, phrase: str) -> dict[str, float]:
        """``{episode key: -bm25}`` for the episodes matching any content word of ``phrase``
        (higher is better; absent = no shared word)."""
        toks = sorted(content_word_set(phrase))
        if not toks:
            return {}
        expr = " OR ".join(f'"{t}"' for t in toks)  # [a-z0-9]+ tokens: quoting is safe
        rows = self.conn.execute(
            "SELECT rowid, -bm25(ep) FROM ep WHERE ep MATCH ?", (expr,)
        ).fetchall()
        return {self.keys[r - 1]: float(s) for r, s in rows}

    def contains(self, text: str) -> bool:
        """True when ``text`` occurs verbatim (case-insensitive) in some episode."""
        needle = text.lower().strip().rstrip(".")
        return bool(needle) and any(needle in t for t in self.lowered)

    def close(self) -> None:
        """Release the in-memory database."""
        self.conn.close()


def episode_verdict(scores: dict[str, float], own: str, margin: float) -> str | None:
    """Why an anchor whose own episode is ``own`` is ambiguous, or None when it is not."""
    if not scores:
        return None
    own_score = scores.get(own, 0.0)
    rival = max((s for k, s in scores.items() if k != own), default=0.0)
    if own_score <= 0.0 or rival > own_score:
        return "not_top"
    if rival >= margin * own_score:
        return "runner_up_close"
    return None


def filter_by_episodes(
    anchors: list[Anchor],
    indexes: dict[str, tuple[EpisodeIndex, Callable[[Anchor], str]]],
    *,
    margin: float = DEFAULT_MARGIN,
) -> tuple[list[Anchor], Counter[str], int]:
    """Keep the anchors whose own episode beats every other by ``margin``.

    ``indexes`` maps an anchor scope to ``(index, own)``, where ``own(anchor)`` is the key
    of the episode the anchor belongs to; anchors of a scope without an index are kept.
    Returns the kept anchors, drop counts by reason and how many kept anchors had no
    lexical match anywhere.
    """
    if not 0.0 < margin <= 1.0:
        raise ValueError(f"episode margin must be in (0, 1], got {margin!r}")
    drops: Counter[str] = Counter()
    kept: list[Anchor] = []
    no_lexical = 0
    for a in anchors:
        entry = indexes.get(a.scope)
        if entry is None:
            kept.append(a)
            continue
        index, own = entry
        if index.contains(a.text):  # the hidden source text must not be quoted by the index
            drops[f"{a.kind}:episode_verbatim_in_index"] += 1
            continue
        scores = index.scores(a.phrase)
        no_lexical += not scores
        why = episode_verdict(scores, own(a), margin)
        if why:
            drops[f"{a.kind}:episode_{why}"] += 1
        else:
            kept.append(a)
    return kept, drops, no_lexical
