"""A request's operators applied over the dated history of a scope.

Retrieval finds the event a request names; the operators the parser read
(:mod:`chronomem.parse`) then move from that event to the episode meant: an excluded
clause ("not the X one") removes its episode, a weekday keeps the episodes on that day,
an ordinal ("the second time X") picks the n-th episode that mentions the clause, an
offset ("three days after X") or step ("the chat after X") moves along the dated
episodes. The retrieval itself stays in :mod:`chronomem.resolve`, which hands this
module what it needs as callables.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any, NamedTuple

from chronomem import parse as ps
from chronomem.backend import Backend
from chronomem.dates import MONTHS
from chronomem.nocontent import NO_CONTENT
from chronomem.query import content_words, refers_to_episode
from chronomem.sql import visible
from chronomem.types import Scope

#: A further commit counts as a mention of the content clause when its lexical score for
#: the clause is at least this share of the best commit's (written on the development
#: set's ordinals and knowledge-state requests, data_builders/user_queries/locomo_nl_dev).
MENTION_RATIO = 0.5


# "the third time pottery came up, when Mel mentioned finishing another piece": a clause
# set off by a comma or a dash and opened by "when" / "where" / "while" describes the n-th
# mention itself; what is counted is the topic before it.
_DESCRIBES = re.compile(r"\s*(?:[,;:]|\s[-\u2013\u2014]|--)\s*(?:when|where|while|as)\b", re.I)


def counted_topic(clause: str) -> frozenset[str]:
    """The lexical terms of the topic an ordinal counts: ``clause`` up to a describing
    "..., when ..." clause (the whole clause's terms when there is none, or when
    nothing is left before it)."""
    m = _DESCRIBES.search(clause or "")
    if m is None:
        return frozenset()
    return frozenset(content_words(clause[: m.start()]))


class Mentions(NamedTuple):
    """What the lexical stage saw of the content clause, for counting its mentions."""

    lexical: list[tuple[int, float]]  # the lexical stage's (commit, score) list; [] if not run
    terms: list[str]  # the terms it searched for
    holders: Callable[[str, list[int]], set[int]]  # (term, commits) -> the commits holding it


# The meant clause of a contrast placed in time against the ruled-out one: "not X, the
# later one where Y", "..., the more recent chat", "the later photo", "the earlier one".
_AFTER_EXCLUDED = re.compile(
    r"\b(?:the|that)\s+(?:later|newer|more\s+recent|latest|most\s+recent)\s+[a-z]",
    re.IGNORECASE,
)
_BEFORE_EXCLUDED = re.compile(
    r"\b(?:the|that)\s+(?:earlier|older|previous|prior)\s+[a-z]",
    re.IGNORECASE,
)


# Words that place a ruled-out clause in time without naming what it was about ("not the
# one from the spring"): such a clause is no fixed point to count from.
_WHEN_WORDS = frozenset(
    (
        *MONTHS,
        *"spring summer autumn fall winter early late old recent".split(),
        *"monday tuesday wednesday thursday friday saturday sunday".split(),
    )
)


def _side_of_excluded(clause: str, ruled_out: str) -> int:
    """+1 when the meant ``clause`` says it comes after the ``ruled_out`` one, -1 before,
    else 0 (also when the ruled-out clause names no content of its own)."""
    named = [w for w in content_words(ruled_out) if w not in NO_CONTENT and w not in _WHEN_WORDS]
    if not named:
        return 0
    if _AFTER_EXCLUDED.search(clause or ""):
        return 1
    if _BEFORE_EXCLUDED.search(clause or ""):
        return -1
    return 0


class Episode(NamedTuple):
    """One episode of the history: its commits (history order) and its day."""

    first: int
    last: int
    day: Any  # datetime.date or None
    members: tuple[int, ...]


def labelled_history(db: Backend, sc: Scope, label: str) -> list[tuple[int, Any]]:
    """Each visible commit's (version id, value of its ``label``), oldest first."""
    expr, arg = db.json_text("labels", label)
    with db.lock:
        return db.conn.execute(
            f"SELECT version_id, {expr} FROM versions v WHERE scope_id = ? AND "
            f"{visible(db.conn, sc.scope_id, 'v.seq')} ORDER BY seq",
            (arg, sc.scope_id),
        ).fetchall()


def dated_episodes(
    db: Backend, sc: Scope, label: str | None, hist: list[tuple[int, int | None, Any]]
) -> list[Episode]:
    """The visible history grouped into episodes (by ``label``; one commit each without
    one), oldest first; an episode's day is its first dated commit's."""
    labels: dict[int, Any] = {}
    if label:
        labels = {int(v): lab for v, lab in labelled_history(db, sc, label)}
    out: list[list[Any]] = []
    prev: Any = object()
    for vid, _, day in hist:
        lab = labels.get(vid)
        if lab is None or lab != prev or not out:
            out.append([vid, vid, day, [vid]])
        else:
            out[-1][1] = vid
            out[-1][3].append(vid)
            out[-1][2] = out[-1][2] or day
        prev = lab if lab is not None else object()
    return [Episode(a, b, d, tuple(m)) for a, b, d, m in out]


def apply_operators(
    db: Backend,
    sc: Scope,
    p: ps.ParsedRequest,
    ranked: list[tuple[int, float]],
    mentions: Mentions,
    hist: list[tuple[int, int | None, Any]],
    intent: str,
    label: str | None,
    describe: Callable[[str], list[tuple[int, float]]],
    telling: Callable[[int, list[int]], int] | None = None,
) -> tuple[list[tuple[int, float]], dict[str, Any]]:
    """``ranked`` with the commit the operators land on first: ruled-out episodes removed,
    month / weekday filters, then an ordinal over the mentions, then an offset or step
    from the event. ``label`` groups commits into episodes; ``describe`` ranks the commits
    a clause describes; ``telling`` where an undo cuts inside the n-th mention's chat
    (:func:`_nth_mention`). Returns the new ranking and what each step did."""
    steps: dict[str, Any] = {}
    if not ranked:
        return ranked, steps
    eps = dated_episodes(db, sc, label, hist)
    where = {v: i for i, e in enumerate(eps) for v in e.members}
    top = ranked[0][1]
    # The episode the meant clause's own words describe best, and how clearly.
    own: list[tuple[int, float]] = []
    if p.excluded:
        own = _by_episode(ranked, where)
    for clause in p.excluded:
        other = _by_episode(describe(clause), where)
        if not other:
            continue
        gone = where[other[0][0]]
        # "not X, Y" says X and Y are different chats. When both clauses' best match is
        # one episode (X named only the topic both share: "not Maria's 5K, John's
        # one"), the clause that singles it out more clearly keeps it, and the other
        # means its next best.
        if own and gone == where[own[0][0]] and _margin(own) > _margin(other):
            if len(other) < 2:
                continue
            other = other[1:]
            gone = where[other[0][0]]
        kept = [(v, s) for v, s in ranked if where.get(v) != gone]
        side = _side_of_excluded(p.clause, clause)
        if side:
            # "not X, the later one where Y": Y comes after X's chat ("the earlier one":
            # before it), so a match for Y on the wrong side is not the one meant.
            ordered = [(v, s) for v, s in kept if (where.get(v, gone) - gone) * side > 0]
            kept = ordered or kept
        entry = {"clause": clause, "episode_of": int(other[0][0])}
        if side:
            entry["side"] = "after" if side > 0 else "before"
        steps.setdefault("excluded", []).append(entry)
        ranked = kept or ranked
    wd = p.operator("weekday")
    if wd is not None:
        kept = [(v, s) for v, s in ranked if v in where and _weekday(eps[where[v]].day) == wd.n]
        ranked = kept or ranked
        steps["weekday"] = wd.n
    event = ranked[0][0]
    ordinal = p.operator("ordinal")
    if ordinal is not None:
        event = (
            _nth_mention(
                ranked,
                mentions,
                ordinal.n,
                where,
                p.names,
                p.compounds,
                counted_topic(p.clause),
                telling if intent == "undo" else None,
            )
            or event
        )
        steps["mention"] = {"n": ordinal.n, "commit": int(event)}
    # The evidence gates read the commit the content names best: for an ordinal that is
    # the topic's best match, not the n-th mention, which holds the topic's specific
    # word but need not hold its modifiers ("the second time that veterans petition
    # came up": the second chat says only "the petition").
    steps["event"] = int(ranked[0][0] if ordinal is not None else event)
    landed: int | None = event if event in where else None
    move = p.operator("offset") or p.operator("step")
    if move is not None and landed is not None:
        i = where[event]
        j = _offset_episode(eps, i, move.n) if move.kind == "offset" else i + move.n
        if j is not None and 0 <= j < len(eps):
            steps[move.kind] = {"n": move.n, "from_episode_of": int(event)}
            landed = eps[j].first if intent == "undo" else eps[j].last
        else:
            steps[move.kind] = {"n": move.n, "from_episode_of": int(event), "none": True}
    if landed is None or (landed == ranked[0][0] and move is None and ordinal is None):
        return ranked, steps
    if move is None and ordinal is not None and refers_to_episode(p.text):
        # "the second chat about X" names a chat: its edge. "when X first came up" names
        # the mention itself, so the cut falls at its message, as for a plain event.
        e = eps[where[landed]]
        landed = e.first if intent == "undo" else e.last
    steps["landed"] = int(landed)
    rest = [(v, s) for v, s in ranked if v != landed]
    return [(landed, float(top) + 1.0), *rest], steps


def _by_episode(ranked: list[tuple[int, float]], where: dict[int, int]) -> list[tuple[int, float]]:
    """``ranked`` with only the best commit of each episode."""
    seen: set[int] = set()
    out = []
    for v, s in ranked:
        if v in where and where[v] not in seen:
            seen.add(where[v])
            out.append((v, s))
    return out


def _margin(ranked: list[tuple[int, float]]) -> float:
    """How far the best episode stands above the next, as a share of its score."""
    if len(ranked) < 2:
        return 1.0
    return (ranked[0][1] - ranked[1][1]) / max(abs(ranked[0][1]), 1e-12)


def _weekday(day: Any) -> int | None:
    return None if day is None else int(day.weekday())


def _offset_episode(eps: list[Episode], i: int, days: int) -> int | None:
    """The episode nearest ``days`` from episode ``i``'s day, on that side of it (ties:
    the one nearer the event); None when the days are unknown or no episode is there."""
    base = eps[i].day
    if base is None:
        return None
    want = base + timedelta(days=days)
    side = range(i + 1, len(eps)) if days > 0 else range(i - 1, -1, -1)
    best: tuple[int, int] | None = None
    for j in side:
        d = eps[j].day
        if d is None or (d <= base if days > 0 else d >= base):
            continue
        gap = abs((d - want).days)
        if best is None or gap < best[0]:
            best = (gap, j)
    return None if best is None else best[1]


def _nth_mention(
    ranked: list[tuple[int, float]],
    mentions: Mentions,
    n: int,
    where: dict[int, int],
    names: frozenset[str] = frozenset(),
    compounds: frozenset[tuple[str, str]] = frozenset(),
    topic: frozenset[str] = frozenset(),
    telling: Callable[[int, list[int]], int] | None = None,
) -> int | None:
    """The commit of the ``n``-th episode (-1: the last) that mentions the clause, in
    history order. A mention: a commit whose lexical score is at least ``MENTION_RATIO``
    of the best and that holds the clause's most specific word (of the words the best
    commit holds, the one the fewest candidates hold: "pottery" rather than the speaker's
    name in "the second time Melanie talked about pottery"); a name the request writes
    when the best commit lacks it (``names``), and the word beside it in a noun compound
    (``compounds``) too. When fewer than ``n`` pass the ratio, every commit holding the
    word counts. Without lexical scores, the ranked commits that hold that word (the
    best ranked one's). ``topic``: the terms of the counted topic when the clause goes on
    to describe the mention itself (:func:`counted_topic`); the specific word is one of
    them when the best commit holds any. ``telling(commit, earlier)``: where the n-th
    mention's chat tells the topic, given its earlier messages holding the specific word
    (oldest first; an undo; None: at the mention)."""
    pool = [(v, s) for v, s in mentions.lexical if v in where]
    if pool:
        best = max(s for _, s in pool)
        said = [v for v, s in pool if best > 0 and s >= MENTION_RATIO * best]
        # The topic's words are read off the commit the whole ranking puts first (the
        # reranker weighs every clause word), not off the lexical stage's best: a short
        # message holding one clause word ("running shoes") can outscore, by length
        # alone, the messages that say what the request is about ("running seminars").
        held_top = {v for v, _ in pool}
        first = next((v for v, _ in ranked if v in held_top), None)
        top = first if first is not None else max(pool, key=lambda vs: vs[1])[0]
    else:
        # No lexical scores (a dense-only stage): every ranked commit is a candidate,
        # and the specific word below decides which of them mention the clause;
        # without it the earliest candidate of all would be "the first time".
        pool = [(v, s) for v, s in ranked if v in where]
        said = [v for v, _ in pool]
        top = pool[0][0] if pool else None
    holding: list[int] = []  # every pool commit holding the specific word, any score
    if mentions.terms and top is not None:
        held = {t: mentions.holders(t, [v for v, _ in pool]) for t in mentions.terms}
        terms = mentions.terms
        if any(top in held[t] for t in terms if t in topic):
            # The describing clause ("when Mel mentioned finishing another piece") holds
            # words rarer than the topic's: counting them would count that moment only.
            terms = [t for t in terms if t in topic]
        named = [t for t in terms if top in held[t]]
        # A name the request writes ("a puppy called Toby") identifies the topic: the
        # mentions are the commits that hold it, whether or not the best match does (a
        # common noun beside it, "puppy", also counts another pet's first day). A name
        # most of the pool holds (a speaker's) identifies nothing.
        own = [t for t in terms if t in names and 0 < len(held[t]) <= len(pool) / 2]
        if own:
            named = own
        elif n == 1 and named and all(t in names and len(held[t]) > len(pool) / 2 for t in named):
            # The first mention, and the best match holds only a name most of the pool
            # holds (a speaker's): the topic is said there in other words ("got married"
            # for a wedding), and the name's first mention is the first chat, not the
            # topic's. The best match stands.
            return None
        if named:
            key = min(named, key=lambda t: len(held[t]))
            holding = [v for v, _ in pool if v in held[key]]
            # The specific word inside a noun compound the best match holds whole
            # ("made assistant manager"): a commit with the head alone ("my manager")
            # is no mention of it.
            partners = [b if a == key else a for a, b in compounds if key in (a, b)]
            whole = [held[key]] + [held[t] for t in partners if t in held and top in held[t]]
            said = [v for v in said if all(v in h for h in whole)]
    order = _episode_order(said, ranked, where)
    if n > len(order) and len(_episode_order(holding, ranked, where)) > len(order):
        # "the second time X" says X came up at least twice: when fewer mentions pass
        # the score ratio, the passing mentions (a chat that says X once, beside one
        # that dwells on it) count too. A first mention never needs this.
        order = _episode_order(holding, ranked, where)
    if not order:
        return None
    got = order[-1] if n < 0 else order[min(n, len(order)) - 1]
    # An undo cuts where the mention's chat first tells the topic: an earlier message of
    # that chat holding the specific word ("we had to say goodbye to Max") may tell it,
    # though a later one that dwells on it scores higher; ``telling`` decides.
    if telling is None:
        return got
    return telling(got, [v for v in sorted(holding) if where[v] == where[got] and v < got])


def _episode_order(
    said: list[int], ranked: list[tuple[int, float]], where: dict[int, int]
) -> list[int]:
    """The first of ``said``'s commits in each episode, in history order (only ranked
    commits, when any of ``said`` is ranked)."""
    allowed = {v for v, _ in ranked}
    said = [v for v in said if v in allowed] or said
    by_episode: dict[int, int] = {}
    for v in said:
        e = where[v]
        if e not in by_episode or v < by_episode[e]:
            by_episode[e] = v
    return [by_episode[e] for e in sorted(by_episode)]
