"""Where an undo cuts inside a chat: before the first message that tells the event.

At turn granularity a chat is many commits, and retrieval often ranks first a later
message of the same chat that dwells on the event ("rock climbing was awesome, I felt so
accomplished reaching the top") over the one that first told it ("my friends and I took a
rock climbing class and I made it to the top"): it repeats the event's words. "Undo from
when Andrew went climbing" and "before you knew X" mean the moment the event entered the
conversation, so the cut moves to the earliest message of the best message's chat whose
lexical score for the request's words is at least ``TELLING_RATIO`` of the best
message's. A ``restore_to`` request ("keep everything through X") is left alone: it keeps
the event and what was said of it. Nothing changes at session granularity (one commit per
chat) or in a store without episode labels.

The same cut moves when the request names who said it ("when Tim suggested Edinburgh")
and the best message is the other speaker's reply next to it (:func:`speaker_turn`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from chronomem.backend import Backend
from chronomem.sql import descriptors_of, visible
from chronomem.types import Scope

#: An earlier message of the chat tells the event when its lexical score for the request
#: is at least this share of the best message's: the ratio the mention counter uses for
#: "the first time X came up" (operators.MENTION_RATIO), the same question inside a chat.
TELLING_RATIO = 0.5
#: How far back a chat is read (messages): longer than any chat of the streams here, and a
#: bound on the work per request whatever the history's length.
WINDOW = 64


def _seq_and_label(db: Backend, sc: Scope, vid: int, expr: str, arg: Any) -> Any:
    """``(seq, episode label)`` of commit ``vid`` (the caller holds the lock), or None when
    it is not in the scope or carries no such label: both walks start from it."""
    row = db.conn.execute(
        f"SELECT seq, {expr} FROM versions WHERE scope_id = ? AND version_id = ?",
        (arg, sc.scope_id, vid),
    ).fetchone()
    return None if row is None or row[1] is None else row


def earlier_in_episode(db: Backend, sc: Scope, top: int, label: str) -> list[int]:
    """The visible commits right before ``top`` with its value of episode ``label`` (the
    unbroken run of them, at most ``WINDOW``), oldest first; [] when ``top`` has none."""
    expr, arg = db.json_text("labels", label)
    with db.lock:
        row = _seq_and_label(db, sc, top, expr, arg)
        if row is None:
            return []
        rows = db.conn.execute(
            f"SELECT version_id, {expr} FROM versions v WHERE scope_id = ? AND seq >= ? "
            f"AND seq < ? AND {visible(db.conn, sc.scope_id, 'v.seq')} ORDER BY seq DESC",
            (arg, sc.scope_id, int(row[0]) - WINDOW, int(row[0])),
        ).fetchall()
    run: list[int] = []
    for v, lab in rows:
        if lab != row[1]:
            break
        run.append(int(v))
    return run[::-1]


def first_telling(
    db: Backend,
    sc: Scope,
    top: int,
    label: str,
    terms: list[str],
    lexical: dict[int, float],
    holds: Callable[[str, list[int]], set[int]],
    counts: Callable[[list[str]], dict[str, int]],
) -> int | None:
    """The earliest message before ``top`` in its chat that tells what ``top`` tells, or
    None when no earlier message does. ``lexical``: the lexical stage's scores for the
    request (a commit it did not return tells nothing); ``holds(term, commits)``: those
    holding ``term``; ``counts(terms)``: how many commits hold each term. Telling: a
    score at least ``TELLING_RATIO`` of ``top``'s, and holding the most specific of the
    request's words that ``top`` holds (the fewest commits hold it): "wore my Gryffindor
    scarf" is told by the message that names the scarf, not by the one that names the
    party it was worn to."""
    best = lexical.get(top)
    if not best or best <= 0 or not terms:
        return None
    before = [
        v
        for v in earlier_in_episode(db, sc, top, label)
        if lexical.get(v, 0.0) >= TELLING_RATIO * best
    ]
    if not before:
        return None
    vids = [*before, top]
    held = {t: holds(t, vids) for t in terms}
    own = [t for t in terms if top in held[t]]
    if not own:
        return None
    n = counts(own)
    key = min(own, key=lambda t: (n.get(t, 0) or float("inf"), own.index(t)))
    return next((v for v in before if v in held[key]), None)


def neighbours(db: Backend, sc: Scope, vid: int, label: str) -> list[int]:
    """The visible commits right before and right after ``vid`` with its value of episode
    ``label`` (the message it answers and the reply to it), in history order."""
    expr, arg = db.json_text("labels", label)
    with db.lock:
        row = _seq_and_label(db, sc, vid, expr, arg)
        if row is None:
            return []
        rows = db.conn.execute(
            f"SELECT version_id, {expr} FROM versions v WHERE scope_id = ? AND seq IN (?, ?) "
            f"AND {visible(db.conn, sc.scope_id, 'v.seq')} ORDER BY seq",
            (arg, sc.scope_id, int(row[0]) - 1, int(row[0]) + 1),
        ).fetchall()
    return [int(v) for v, lab in rows if lab == row[1]]


# -- who said it -------------------------------------------------------------------------

# A message written as a transcript line: the descriptor's "add:" operation, an optional
# "[date]" stamp, then "Name: text".
_SPEAKER = re.compile(r"^\s*(?:[a-z]+:\s*)?(?:\[[^\]]{0,80}\]\s*)?([A-Z][\w'-]{0,39}):\s")
_NAME_WORD = re.compile(r"[A-Za-z][\w-]*(?:'s)?")


# A bracketed aside of a transcript line: its date stamp, "[shares a photo of a castle]",
# "[laughs]": what the line says about itself, not what its speaker said.
_ASIDE = re.compile(r"\[[^\]]{0,400}\]")


def spoken(descriptor: str) -> str:
    """``descriptor`` without its bracketed asides (the words its speaker said)."""
    return _ASIDE.sub(" ", descriptor or "")


def speaker_of(descriptor: str) -> str | None:
    """The speaker a transcript-style message names first ("[date] Tim: ..."), or None."""
    m = _SPEAKER.match(descriptor or "")
    return m.group(1) if m else None


def named_speakers(clause: str, speakers: set[str]) -> set[str]:
    """The ``speakers`` the request's ``clause`` names as the one who said it."""
    # "when Tim suggested Edinburgh for John's trip": the possessive names whose event it
    # is, the bare name who acted; a possessive counts only when no bare name is there.
    found = [w.lower() for w in _NAME_WORD.findall(clause or "")]
    bare = {w for w in found if not w.endswith("'s")}
    owner = {w.removesuffix("'s") for w in found if w.endswith("'s")}
    named = {sp for sp in speakers if sp.lower() in bare}
    if len(named) > 1:
        # "Tim asking John if...", "Joanna telling Nate about...": with both speakers
        # named, the one written first is the subject, the one who said it.
        order = [w for w in found if w in bare]
        first = min(named, key=lambda sp: order.index(sp.lower()))
        named = {first}
    if not named:
        named = {sp for sp in speakers if sp.lower() in owner}
    return named


def told_by_named(db: Backend, sc: Scope, clause: str, got: int, earlier: list[int]) -> int:
    """The first of ``earlier`` (commits of ``got``'s chat before it that hold the topic's
    word, oldest first) said by the one speaker ``clause`` names, else ``got``: "before
    you knew John's dog Max had passed" is told where John says goodbye to Max, not in
    the reply that dwells on it, and "before Caroline first mentioned adopting kids" not
    where Melanie speaks of her own kids."""
    if not earlier:
        return got
    vids = [*earlier, got]
    rows = descriptors_of(db, sc.scope_id, vids)
    who = {int(v): speaker_of(d) for v, d in rows}
    named = named_speakers(clause, {sp for sp in who.values() if sp})
    if len(named) != 1:
        return got
    return next((v for v in earlier if who.get(v) in named), got)


def speaker_turn(
    db: Backend, sc: Scope, clause: str, ranked: list[tuple[int, float]], label: str
) -> tuple[list[tuple[int, float]], dict[str, Any] | None]:
    """``ranked`` with the best message moved onto its neighbour when the request names
    who said it ("when Tim suggested Edinburgh") and the best message is the other
    speaker's reply or question next to it. A reply repeats the words of the message it
    answers, so retrieval often ranks it first; the request names the one who told.
    Only a neighbour in the same episode by the one speaker the clause names is taken,
    the better ranked of the two, else the earlier (a statement precedes its reply)."""
    top = ranked[0][0]
    expr, arg = db.json_text("labels", label)
    with db.lock:
        seq = db.conn.execute(
            "SELECT seq FROM versions WHERE scope_id = ? AND version_id = ?",
            (sc.scope_id, top),
        ).fetchone()
        if seq is None:
            return ranked, None
        rows = db.conn.execute(
            f"SELECT version_id, seq, descriptor, {expr} FROM versions v WHERE scope_id = ? "
            f"AND seq BETWEEN ? AND ? AND {visible(db.conn, sc.scope_id, 'v.seq')} ORDER BY seq",
            (arg, sc.scope_id, int(seq[0]) - 1, int(seq[0]) + 1),
        ).fetchall()
    info = {int(v): (int(s), speaker_of(d), lab) for v, s, d, lab in rows}
    if top not in info or info[top][1] is None or info[top][2] is None:
        return ranked, None
    speakers = {sp for _, sp, _ in info.values() if sp}
    named = named_speakers(clause, speakers)
    if len(named) != 1 or info[top][1] in named:
        return ranked, None
    near = [
        v for v, (_, sp, lab) in info.items() if v != top and sp in named and lab == info[top][2]
    ]
    if not near:
        return ranked, None
    pos = {v: i for i, (v, _) in enumerate(ranked)}
    near.sort(key=lambda v: (pos.get(v, len(ranked)), info[v][0]))
    said = near[0]
    rest = [(v, s) for v, s in ranked if v != said]
    return [(said, float(ranked[0][1]) + 1.0), *rest], {
        "speaker": next(iter(named)),
        "from": int(top),
    }
