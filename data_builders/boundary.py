"""Boundary windows and the recall-statement helpers.

The RC-QA headline reads the battery items whose evidence is in the session at ``v*``
(kept by a correct rollback, lost by one that stops short) and in the first session
after it (gone after a correct rollback, exposed by one that overshoots); see
:func:`data_builders.battery.label_probes` and docs/metrics.md.
"""

from __future__ import annotations

from functools import lru_cache

from chronobench.data.schema import Stream
from chronobench.text import CONTENT_STOPWORDS
from data_builders.pools import ProbePool


def boundary_windows(
    pool: ProbePool, v_star: int
) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """The two version windows around ``v*`` that a rollback must get right.

    ``before``: from the first write of the session holding ``v*`` up to ``v*`` (what an
    off-by-one towards the past loses); ``after``: from ``v* + 1`` to the last write of
    the session holding ``v* + 1`` (what an off-by-one towards the future exposes). At
    session granularity these are the session at ``v*`` and the first session after
    it; a window is None where there is no such session (``v* = 0``, or the end).
    """
    spans = sorted((s.first_version, s.last_version) for s in pool.sessions)
    before = next(((a, v_star) for a, b in reversed(spans) if a <= v_star), None)
    after = next(((v_star + 1, b) for a, b in spans if b > v_star), None)
    return (before if v_star >= 1 else None), after


RECALL_PREFIX = "Is it true that"
#: A recall statement must carry this many content stems that the memory on the wrong
#: side of the boundary never said (docs/metrics.md: recall probes).
RECALL_MIN_NOVEL = 2


def recall_question(statement: str) -> str:
    """``Is it true that <statement>?`` (a leading function word is lower-cased)."""
    text = statement.strip().rstrip(".!? ")
    first, _, rest = text.partition(" ")
    if first.lower() in CONTENT_STOPWORDS:
        text = f"{first.lower()} {rest}".strip()
    return f"{RECALL_PREFIX} {text}?"


def novel_enough(statement: str, known: frozenset[str] | set[str], names: list[str]) -> bool:
    """Whether ``statement`` has :data:`RECALL_MIN_NOVEL` content stems ``known`` lacks."""
    from chronobench.metrics.content import content_stems

    return len(content_stems(statement, names) - known) >= RECALL_MIN_NOVEL


_UPTO: dict[tuple[int, int, tuple[str, ...]], tuple[Stream, frozenset[str]]] = {}


def stems_upto(stream: Stream, v: int, names: tuple[str, ...]) -> frozenset[str]:
    """Content stems of every write up to version ``v`` (memoised per stream object:
    every query of a stream asks for the same prefixes)."""
    key = (id(stream), v, names)
    hit = _UPTO.get(key)
    if hit is not None and hit[0] is stream:
        return hit[1]
    if len(_UPTO) > 4096:
        _UPTO.clear()
    known: set[str] = set()
    for w in stream.writes[: max(v, 0)]:
        known |= _write_stems(" ".join(op.text or "" for op in w.ops), names)
    out = frozenset(known)
    _UPTO[key] = (stream, out)
    return out


@lru_cache(maxsize=8192)
def _write_stems(text: str, names: tuple[str, ...]) -> frozenset[str]:
    # One write's content stems, memoised: every query of a stream re-reads its writes.
    from chronobench.metrics.content import content_stems

    return frozenset(content_stems(text, names))
