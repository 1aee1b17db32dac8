"""Where a cut at one message falls when the event it names is told over several.

At turn granularity a request that names an event ("keep up to when Dave's band jammed",
"forget from James's new video card") asks for a cut at the message that tells it. An
event is often an exchange rather than one message: the statement, a photo, the other
speaker's reply that picks it up. Retrieval finds one message of the exchange, usually
the one that shares most words with the request. "Keep up to X" keeps the exchange
about X whole, so its cut falls after the exchange's last message; "forget from X"
forgets it whole, so its cut falls before the first.

A neighbouring message belongs to the exchange when it is in the same episode and
repeats a word of the request that the message retrieval found also holds (an echo).
A reply that only thanks or asks "how was it?" names nothing, so the cut stays where it
was. Names of the episode's speakers never count: replies address each other by name.
"""

from __future__ import annotations

import re
from typing import Any

from chronomem.backend import Backend
from chronomem.query import REQUEST_WORDS, content_query, fts_terms
from chronomem.sql import visible
from chronomem.types import Scope

# A transcript message's stamp and speaker ("add: [1:56 pm on 8 May, 2023] Dave: ..."):
# the stamp's month would match "in October" in every message of that day.
_PREFIX = re.compile(r"^\s*(?:[a-z]+:\s*)?(?:\[[^\]]{0,80}\]\s*)?(?:([A-Z][\w'-]{0,39}):\s)?")
# How far a cut may move: one message each way. An exchange of three or more messages
# about one event is rare, and a longer walk crosses into the next topic of the chat.
REACH = 1
# The share of the request words the found message holds that a neighbour must repeat to
# be part of its exchange. A reply that picks up one word of several ("That frog looks
# yummy!" after the Harry Potter party) has moved on; one that repeats half or more
# ("Gaming marathons are the best!") is still telling the event. Measured on
# locomo_v3_tuning's turn cell (evidence gold): any echo 76.2, half 84.2, two thirds 82.2.
ECHO_SHARE = 0.5


def _body(descriptor: str) -> tuple[str | None, str]:
    m = _PREFIX.match(descriptor or "")
    if m is None:
        return None, descriptor or ""
    return m.group(1), (descriptor or "")[m.end() :]


def exchange_edge(
    db: Backend,
    sc: Scope,
    clause: str,
    ranked: list[tuple[int, float]],
    label: str,
    intent: str,
) -> tuple[list[tuple[int, float]], dict[str, Any] | None]:
    """``ranked`` with its best message moved to the edge of the exchange it is part of:
    the next message for ``restore_to``, the previous one for ``undo``, when that message
    is in the same episode and echoes a request word the best message holds. Returns
    the new ranking and what moved (None: nothing did)."""
    from chronomem.fts5_tokenizer import tokenizer

    if not ranked:
        return ranked, None
    top = ranked[0][0]
    step = 1 if intent == "restore_to" else -1
    expr, arg = db.json_text("labels", label)
    with db.lock:
        seq = db.conn.execute(
            "SELECT seq FROM versions WHERE scope_id = ? AND version_id = ?",
            (sc.scope_id, top),
        ).fetchone()
        if seq is None:
            return ranked, None
        lo, hi = sorted((int(seq[0]), int(seq[0]) + step * REACH))
        rows = db.conn.execute(
            f"SELECT version_id, seq, descriptor, {expr} FROM versions v WHERE scope_id = ? "
            f"AND seq BETWEEN ? AND ? AND {visible(db.conn, sc.scope_id, 'v.seq')} ORDER BY seq",
            (arg, sc.scope_id, lo, hi),
        ).fetchall()
    if step < 0:
        rows = rows[::-1]
    if not rows or int(rows[0][0]) != top or rows[0][3] is None:
        return ranked, None
    bodies = [_body(str(d or "")) for _, _, d, _ in rows]
    names = {sp.lower() for sp, _ in bodies if sp}
    terms = [
        t
        for t in fts_terms(content_query(clause))
        if t not in names and t not in REQUEST_WORDS and len(t) > 1
    ]
    if not terms:
        return ranked, None
    tok = tokenizer()
    wanted = {s for stems in tok.phrases(terms) for s in stems}
    held = [set(stems) for stems in tok.tokens([b for _, b in bodies])]
    echo = wanted & held[0]
    edge = top
    for (vid, _, _, lab), words in zip(rows[1:], held[1:], strict=True):
        if lab != rows[0][3] or not echo or len(echo & words) < ECHO_SHARE * len(echo):
            break
        edge = int(vid)
    if edge == top:
        return ranked, None
    rest = [(v, s) for v, s in ranked if v != edge]
    return [(edge, float(ranked[0][1]) + 1.0), *rest], {"exchange": int(edge), "from": int(top)}
