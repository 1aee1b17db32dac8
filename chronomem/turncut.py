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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chronomem.backend import Backend
from chronomem.sql import visible
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
