"""A selective-undo request in plain words -> the commits that state what it names.

"Forget what I said about the adoption agency" names content, not a point in time: the
answer is a set of commits (the turns that state it), reverted with
:mod:`chronomem.selective`, never a cut point. :func:`match` reuses the rollback
resolver's stages unchanged: the request's content words (:func:`nl.content_tokens`,
request vocabulary such as "forget", "what I said about" removed), the hybrid retrieval
and the reranker over commit descriptors (:func:`resolve.describe_request`), and the
confidence gate's evidence rule (:func:`nl.request_evidence`: lexical match, else dense cosine at
least ``nl.DENSE_FLOOR``). What it adds:

1. no intent mapping and no episode snapping: the described commits are the answer, not
   their parents or their session's boundary; ``revert`` versions are never candidates;
2. a set, not a top-1: the best commit, plus every other commit of the top ``k`` whose
   lexical score for the content words is at least ``SET_RATIO`` of the best one's and
   that is among the first ``MAX_SET`` so kept (a fact told over two or three turns);
3. the reply right after the best commit, in its chat, when it holds a third of the
   request's content words (:func:`_restating_neighbours`: the partner's reply repeats
   the fact, and a reader answers from it);
4. refusal: a request without content words ("forget that", "*", "hi, forget what I
   said earlier": filler is no content) is refused before any retrieval, and so is one
   whose best commit has no evidence or only weak evidence (:func:`nl.weak_match`).

``SET_RATIO`` and ``MAX_SET`` were chosen before any RQ4 run and not tuned since (never on
the hand-written held-out set): LoCoMo observations cite one to three turns.
"""

from __future__ import annotations

import math
from typing import Any

from chronomem import nl
from chronomem import nocontent as nc
from chronomem import parse as ps
from chronomem import query as q
from chronomem import resolve as rs
from chronomem import turncut as tc
from chronomem import vocabulary as vc
from chronomem.backend import Backend
from chronomem.types import Scope, UncertainRequestError

SET_RATIO = 0.8  # a further commit's lexical score, relative to the best commit's
MAX_SET = 3  # commits one request may name
NEIGHBOUR_SHARE = 1 / 3  # content words of the request a restating neighbour holds
# How people point at what they said, beyond the rollback vocabulary: no content.
_SAID_WORDS = frozenset(
    "said say saying told tell telling mentioned mention thing things something bit part "
    "parts shared share info information".split()
)


def match(
    db: Backend, sc: Scope, request: str, k: int, rt: rs.Retrieval
) -> tuple[list[tuple[int, float]], dict[str, Any]]:
    """The commits ``request`` names, ``[(version_id, score)]`` best first, and the
    evidence (``confidence``, ``content_words``, ``lexical``, ``cosine``, ``matched``).
    Raises :class:`UncertainRequestError` (nothing changes) when it names no content or
    its best commit has no evidence."""
    parsed = vc.read_against(db, sc, ps.parse(request))
    toks = [t for t in parsed.named if t not in _SAID_WORDS]
    if not toks or not parsed.names_content:
        raise UncertainRequestError(
            f"request {request[:80]!r} names no content (only symbols, greetings, times "
            "said in passing or request words such as 'forget that'); say what to forget, e.g. 'forget what I said about "
            "the adoption agency', or call revert_commits(app, user, [version]); nothing "
            "was changed"
        )
    if not nc.asks_for_change(request):
        raise UncertainRequestError(
            f"request {request[:80]!r} asks for no change of memory (no request verb such "
            "as forget, drop or undo); nothing was changed"
        )
    depth = max(k, MAX_SET) + 8  # room for revert versions, which are never candidates
    found = rs.describe_request(db, sc, parsed.clause, depth, rt)
    with db.lock:
        reverts = _revert_versions(db, sc)
    ranked = [(int(v), float(s)) for v, s in found.ranked if int(v) not in reverts][:k]
    if not ranked:
        raise UncertainRequestError(f"no commit matches {request[:80]!r}; nothing was changed")
    best = ranked[0][0]
    ev, _ = nl.request_evidence(db, sc, parsed.clause, toks, found, rt, best, None)
    evidence = (
        1.0
        if ev["lexical"]
        else nl.clip_unit((ev["cosine"] - nl.DENSE_FLOOR) / (nl.DENSE_FULL - nl.DENSE_FLOOR))
    )
    if evidence <= 0.0:
        raise UncertainRequestError(
            f"request {request[:80]!r}: no content word matches the best commit (version "
            f"{best}) and its dense similarity {ev['cosine']:.2f} is below {nl.DENSE_FLOOR}; "
            "rephrase with words from the memory; nothing was changed"
        )
    weak = (
        nl.weak_match(db, sc, toks, best, ev, rt, list(parsed.evidence))
        or nl.names_only(db, sc, toks, best, ev, rt, request, list(parsed.evidence))
        or nl.absent_names(db, sc, toks, rt, request, list(parsed.evidence))
    )
    if weak is not None:
        raise UncertainRequestError(
            f"request {request[:80]!r}: {weak}; rephrase with words from the memory; "
            "nothing was changed"
        )
    chosen = [ranked[0]]
    if ev["lexical"]:
        terms = q.fts_terms(" ".join(toks))
        scores = nl.lexical_scores(db, sc, terms, found, [v for v, _ in ranked], rt)
        top = scores.get(best) or 0.0
        for v, s in ranked[1:]:
            got = scores.get(v)
            if len(chosen) < MAX_SET and got is not None and top > 0 and got >= SET_RATIO * top:
                chosen.append((v, s))
    if ev["lexical"] and rt.episode_label and len(chosen) < MAX_SET:
        chosen += _restating_neighbours(db, sc, toks, chosen, reverts, rt.episode_label)
    return chosen, {
        "confidence": round(evidence, 4),
        "content_words": toks[:12],
        "lexical": ev["lexical"],
        "cosine": round(ev["cosine"], 4),
        "matched": [[v, round(s, 6)] for v, s in chosen],
        "candidates": [[v, round(s, 6)] for v, s in ranked],
    }


def _restating_neighbours(
    db: Backend,
    sc: Scope,
    toks: list[str],
    chosen: list[tuple[int, float]],
    reverts: set[int],
    label: str,
) -> list[tuple[int, float]]:
    """The reply right after the best commit, in its chat, when it restates what the
    request names: it holds at least ``NEIGHBOUR_SHARE`` of the request's content words
    (and two). A fact told in a chat is often repeated by the reply ("your kids had so
    much fun at the park!"), and a reader answers from the reply as well; the lexical
    set test misses it when the reply is short or spreads the words differently. The
    message before is not taken: it asks or prompts ("any trips planned?") and states
    nothing. Only adds, up to ``MAX_SET`` in all."""
    words = sorted(set(toks))
    need = max(2, math.ceil(NEIGHBOUR_SHARE * len(words)))
    if len(words) < need:
        return []
    have = {v for v, _ in chosen}
    score = chosen[-1][1]
    out: list[tuple[int, float]] = []
    for v in tc.neighbours(db, sc, chosen[0][0], label):
        if v < chosen[0][0] or v in have or v in reverts or len(chosen) + len(out) >= MAX_SET:
            continue
        with db.lock:
            held = sum(
                1
                for w in words
                if q.fts_terms(w)
                and db.descriptor_scores(sc.scope_id, q.fts_terms(w), [v]).get(v) is not None
            )
        if held >= need:
            out.append((v, score))
    return out


def _revert_versions(db: Backend, sc: Scope) -> set[int]:
    rows = db.conn.execute(
        "SELECT version_id FROM versions WHERE scope_id = ? AND op = 'revert'", (sc.scope_id,)
    ).fetchall()
    return {int(r[0]) for r in rows}
