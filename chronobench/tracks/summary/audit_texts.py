"""The texts the RQ3 audit scores: ChronoMem's summary path replayed at any version, and
outputs built from the public writes alone (no annotation, no request).

The replay is what ChronoMem's session prompts for a summary request after restoring
write ``v`` in truncate mode (the restored items in timeline order, spread into the
summary budget) read by the extractive backbone; the test suite checks it against the
runner's own oracle cell (tests/test_request_blind_floors.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from chronobench.metrics.content import content_words
from chronobench.protocols import public_writes
from chronobench.text import stem

__all__ = ["FirstSaid", "SummaryReplay", "fit_budget"]


class SummaryReplay:
    """ChronoMem's summary reply after restoring write ``v`` of one stream, memoised."""

    def __init__(self, stream: Any) -> None:
        from chronobench.systems.registry import ChronoMemOptions

        self.stream = stream
        self.n = len(stream.writes)
        self.budget = ChronoMemOptions().summary_budget_tokens
        self._texts = [[op.text for op in w.ops if op.text] for w in stream.writes]
        self._memo: dict[tuple[int, str], str] = {}

    def at(self, version: int, question: str) -> str:
        """The summary after restoring write ``version`` (clamped to ``0..n``; 0 is the
        empty memory)."""
        v = max(0, min(self.n, int(version)))
        key = (v, question)
        if key not in self._memo:
            from chronobench.backbones.extractive import ExtractiveBackbone
            from chronobench.protocols import GenerationParams
            from chronobench.systems.base import pack_spread
            from chronobench.systems.prompts import summary_request

            items = pack_spread([t for ts in self._texts[:v] for t in ts], self.budget)
            request = summary_request(question, items, GenerationParams())
            self._memo[key] = ExtractiveBackbone().generate([request])[0].text
        return self._memo[key]


class FirstSaid:
    """Per session, the content words the stream says for the first time there, most
    frequent first, read from the public writes only (speakers' names left out).

    ``rank="session"`` counts a word's uses in the session that first says it;
    ``rank="stream"`` counts them over the whole stream."""

    def __init__(self, stream: Any) -> None:
        writes = public_writes(stream)
        names = sorted({c.author for w in writes for c in w.changes if c.author})
        first: dict[str, int] = {}
        surface: dict[str, str] = {}
        in_session: Counter[str] = Counter()
        overall: Counter[str] = Counter()
        for w in writes:
            session = int(w.labels.get("session", w.write_id))
            text = " ".join(c.text for c in w.changes if c.text)
            for word in content_words(text, names):
                st = stem(word)
                first.setdefault(st, session)
                surface.setdefault(st, word.lower())
                overall[st] += 1
                if first[st] == session:
                    in_session[st] += 1
        self.sessions = sorted(set(first.values()))
        self._ranked: dict[str, dict[int, list[str]]] = {}
        for rank, counts in (("session", in_session), ("stream", overall)):
            table: dict[int, list[str]] = {s: [] for s in self.sessions}
            for st in sorted(first, key=lambda st: (-counts[st], st)):
                table[first[st]].append(surface[st])
            self._ranked[rank] = table

    def words(self, session: int, m: int, rank: str = "session") -> list[str]:
        """The ``m`` most frequent words first said in ``session``."""
        return self._ranked[rank].get(session, [])[:m]

    def even_split(self, sessions: Sequence[int], total: int, rank: str = "session") -> str:
        """``total`` words split evenly over ``sessions``, in session order."""
        if not sessions:
            return ""
        m = max(1, total // len(sessions))
        out = [w for s in sessions for w in self.words(s, m, rank)]
        return " ".join(out[:total])


def fit_budget(head: Sequence[str], text: str, budget: int) -> str:
    """``head`` words, then the last words of ``text`` that still fit in ``budget``: the
    scorer reads only the first ``budget`` words, so added words must displace the
    start of ``text`` (the earliest sessions of a summary in timeline order), not its
    end (the newest restored session)."""
    room = max(0, budget - len(head))
    tail = text.split()[-room:] if room else []
    return " ".join([*head, *tail])
