"""NL -> version resolution stages: lexical, dense, and RRF fusion.

Scores are "higher is better" everywhere: the lexical stage returns the backend's
score (SQLite: ``-bm25()``, FTS5's bm25 being lower-is-better). A version's dense score is the maximum cosine
over the vectors of its descriptor windows, so a long descriptor is represented
in full instead of being truncated at the embedder's window (the per-scope matrix and
its search: :mod:`chronomem.dense`).

The stages rank the commits a query *describes* (:func:`describe_request`: the
store's stage, then its reranker); :func:`restore_targets` turns that into restore
targets (an ``undo`` targets the described commit's parent, an episode request its
episode's boundary). A request is read once (:mod:`chronomem.parse`);
its operators ("three days after X", "the second time X", "not the X one") move from
the event retrieval found to the episode meant (:mod:`chronomem.operators`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from chronomem import lexindex as lx
from chronomem import meaning as mn
from chronomem import operators as op
from chronomem import parse as ps
from chronomem import timeref as tr
from chronomem import turncut as tc
from chronomem import vocabulary as vc
from chronomem.backend import Backend
from chronomem.dense import DenseCache, dense
from chronomem.dense import DenseMatrix as DenseMatrix  # re-exported
from chronomem.fts5_tokenizer import activity_stem, holds_activity, tokenizer
from chronomem.query import content_query, fts_terms, refers_to_episode
from chronomem.scope_cache import ScopeCache
from chronomem.sql import descriptors_of, visible
from chronomem.types import Scope


def lexical(
    db: Backend, scope_id: int, query: str, k: int, index: lx.LexicalIndex | None = None
) -> list[tuple[int, float]]:
    """Top-``k`` versions by the backend's lexical score over descriptors (FTS5: ``-bm25``),
    computed from the scope's in-memory ``index`` when given (the same scores, without
    scoring every match in the backend; see :mod:`chronomem.lexindex`)."""
    terms = fts_terms(query)
    if index is not None:
        got = lx.match(db, index, scope_id, terms, k)
        if got is not None:
            return got
    return db.match_descriptors(scope_id, terms, k)


def lexical_index(db: Backend, sc: Scope, rt: Retrieval) -> lx.LexicalIndex | None:
    """The scope's in-memory lexical index at its generation (None: the store keeps none).
    Call with ``db.lock`` held."""
    return None if rt.lexicon is None else rt.lexicon.get(db, sc.scope_id, sc.gen)


def rrf(
    lists: Sequence[Sequence[tuple[int, float]]], k0: int = 60, limit: int | None = None
) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: sum over lists of 1 / (k0 + rank), ranks from 1; best
    first, ties to the lower id; only the first ``limit`` when given."""
    fused: dict[int, float] = {}
    for ranked in lists:
        for rank, (vid, _) in enumerate(ranked, start=1):
            fused[vid] = fused.get(vid, 0.0) + 1.0 / (k0 + rank)
    if limit is not None:  # the same as sorting and cutting (heapq's documented contract)
        return heapq.nsmallest(max(0, limit), fused.items(), key=_fused_order)
    return sorted(fused.items(), key=_fused_order)


def _fused_order(kv: tuple[int, float]) -> tuple[float, int]:
    return (-kv[1], kv[0])


def apply_intent(
    ranked: Sequence[tuple[int, float]], intent: str, parents: dict[int, int | None]
) -> list[tuple[int, float]]:
    """Map described commits to restore targets: parent for ``undo``, itself otherwise.

    Duplicated targets keep their best score; the root (0) is a valid undo target.
    """
    if intent != "undo":
        return list(ranked)
    out: dict[int, float] = {}
    for vid, score in ranked:
        target = parents.get(vid)
        if target is None:
            continue
        if target not in out:
            out[target] = score
    return list(out.items())


def episode_bounds(episodes: Sequence[tuple[int, object]], intent: str) -> dict[int, int]:
    """Each labelled commit's episode boundary: its episode's first commit for ``undo``
    (the intent shift then takes its parent), its last for ``restore_to``.

    ``episodes`` lists ``(version_id, episode_label)`` in history order (labels may be
    None: such commits have no boundary).
    """
    first: dict[object, int] = {}
    last: dict[object, int] = {}
    label_of: dict[int, object] = {}
    for vid, label in episodes:
        label_of[vid] = label
        if label is None:
            continue
        first.setdefault(label, vid)
        last[label] = vid
    bound = first if intent == "undo" else last
    return {vid: bound[label] for vid, label in label_of.items() if label is not None}


class EpisodeCache(ScopeCache[tuple[int, dict[str, dict[int, int]]]]):
    """Per scope and label (key ``(scope id, label)``), the episode boundaries of
    :func:`episode_bounds` for both intents, read in one scan of the visible history and
    kept until ``gen`` moves."""

    def bounds(self, db: Backend, sc: Scope, label: str, intent: str) -> dict[int, int]:
        """Each labelled visible commit's boundary for ``intent`` (do not modify)."""
        key = (sc.scope_id, label)
        hit = self.cached(key)
        if hit is None or hit[0] != sc.gen:
            rows = op.labelled_history(db, sc, label)
            maps = {i: episode_bounds(rows, i) for i in ("undo", "restore_to")}
            hit = self.store(key, (sc.gen, maps))
        return hit[1]["undo" if intent == "undo" else "restore_to"]


def _snap(ranked: Sequence[tuple[int, float]], bounds: dict[int, int]) -> list[tuple[int, float]]:
    out: dict[int, float] = {}
    for vid, score in ranked:
        vid = bounds.get(vid, vid)
        if vid not in out:
            out[vid] = score
    return list(out.items())


# -- one request: stage, reranker, targets ---------------------------------------------------


@dataclass(frozen=True)
class Retrieval:
    """The store's retrieval settings and caches, read when a request starts."""

    stage: str  # "lexical", "dense" or "hybrid"
    depth: int  # candidates taken from each stage before fusion
    rerank_depth: int  # fused candidates passed to the reranker
    rrf_k0: int
    reranker: Any  # a Reranker or None
    episode_label: str | None
    dense: DenseCache
    query_vector: Callable[[str], np.ndarray]
    lexicon: lx.LexicalCache | None = None  # None: the backend scores every lexical match
    episodes: EpisodeCache | None = None  # None: the episode scan runs per request
    meaning: mn.MeaningStage | None = None  # None: the rules' reading stands


class Described(NamedTuple):
    """The commits a request describes, best first, and what the lexical stage saw."""

    ranked: list[tuple[int, float]]
    lexical: list[tuple[int, float]] | None  # the lexical stage's list (None: not run)
    lexical_terms: list[str]  # the terms it searched for
    lexical_k: int  # how many it asked for (fewer back: every match is in the list)


class Targets(NamedTuple):
    """Restore targets, best first, and each described commit's own target."""

    ranked: list[tuple[int, float]]
    own: dict[int, int | None]  # described commit -> its target (None: it has none)


def dense_stage(
    db: Backend, sc: Scope, query: str, k: int, rt: Retrieval
) -> list[tuple[int, float]]:
    """Top-``k`` versions by max cosine between ``query`` and a descriptor window."""
    if not query.strip():
        return []
    with db.lock:
        dm = rt.dense.get(db, sc.scope_id, sc.gen)
    return dense(dm, rt.query_vector(query), k)


def hybrid_stage(
    db: Backend, sc: Scope, query: str, k: int, rt: Retrieval
) -> tuple[list[tuple[int, float]], list[tuple[int, float]], int]:
    """RRF of the lexical and dense top-``max(k, depth)`` lists, cut to ``k``; also
    returns the lexical list and its length limit."""
    depth = max(k, rt.depth)
    with db.lock:
        lex = lexical(db, sc.scope_id, query, depth, lexical_index(db, sc, rt))
    fused = rrf([lex, dense_stage(db, sc, query, depth, rt)], rt.rrf_k0)
    return fused[:k], lex, depth


def describe_request(
    db: Backend,
    sc: Scope,
    query: str,
    k: int,
    rt: Retrieval,
    *,
    rerank: bool = True,
    stage: str | None = None,
) -> Described:
    """Commits the request describes: the retrieval ``stage`` (default ``rt.stage``) over
    its content words, then the reranker over the top ``rerank_depth``."""
    cq = content_query(query)
    stage = rt.stage if stage is None else stage
    n = max(k, rt.rerank_depth)
    lex: list[tuple[int, float]] | None = None
    lex_k = n
    if stage == "lexical":
        with db.lock:
            fused = lex = lexical(db, sc.scope_id, cq, n, lexical_index(db, sc, rt))
    elif stage == "dense":
        fused = dense_stage(db, sc, cq, n, rt)
    else:
        fused, lex, lex_k = hybrid_stage(db, sc, cq, n, rt)
    found = Described(fused[:k], lex, fts_terms(cq), lex_k)
    if rt.reranker is None or not rerank or not fused:
        return found
    head = fused[: rt.rerank_depth]
    with db.lock:
        desc = dict(
            db.conn.execute(
                f"SELECT version_id, descriptor FROM versions WHERE scope_id = ? AND "
                f"version_id IN ({','.join('?' * len(head))})",
                (sc.scope_id, *[v for v, _ in head]),
            ).fetchall()
        )
    cands = [(v, desc.get(v, ""), s) for v, s in head]
    if lex is not None and _takes_lexical(rt.reranker):
        reranked = rt.reranker.rerank(cq, cands, lexical=dict(lex))
    else:
        reranked = rt.reranker.rerank(cq, cands)
    seen = {v for v, _ in reranked}
    ranked = (list(reranked) + [(v, s) for v, s in fused if v not in seen])[:k]
    return found._replace(ranked=ranked)


def _takes_lexical(reranker: Any) -> bool:
    """Whether ``reranker.rerank`` accepts the lexical stage's scores (``lexical=``)."""
    import inspect

    try:
        return "lexical" in inspect.signature(reranker.rerank).parameters
    except (TypeError, ValueError):
        return False


def restore_targets(
    db: Backend,
    sc: Scope,
    described: list[tuple[int, float]],
    intent: str,
    query: str,
    episode_label: str | None,
    episodes: EpisodeCache | None = None,
) -> Targets:
    """Map described commits to restore targets: each to its episode's boundary when the
    request names a whole episode, then, for ``undo``, to its parent. One episode scan
    and one parent lookup serve every candidate."""
    bounds: dict[int, int] = {}
    if episode_label and described and refers_to_episode(query):
        bounds = (episodes or EpisodeCache()).bounds(db, sc, episode_label, intent)
        snapped = _snap(described, bounds)
    else:
        snapped = list(described)
    own: dict[int, int | None] = {v: bounds.get(v, v) for v, _ in described}
    if intent != "undo" or not snapped:
        return Targets(snapped, own)
    vids = [v for v, _ in snapped]
    with db.lock:
        parents = dict(
            db.conn.execute(
                f"SELECT version_id, parent FROM versions WHERE scope_id = ? AND version_id "
                f"IN ({','.join('?' * len(vids))})",
                (sc.scope_id, *vids),
            ).fetchall()
        )
    own = {v: parents.get(b) for v, b in own.items()}
    return Targets(apply_intent(snapped, intent, parents), own)


# -- requests that name a time -------------------------------------------------------------

MONTH_DEPTH = 64  # described commits searched when a month narrows an event request


def dated_history(db: Backend, sc: Scope) -> list[tuple[int, int | None, Any]]:
    """``(version_id, parent, day)`` on the scope's linear history, root first; ``day``
    is the write's ``valid_time`` read as a calendar day (None when it has none)."""
    with db.lock:
        rows = db.conn.execute(
            f"SELECT version_id, parent, valid_time FROM versions v WHERE scope_id = ? AND "
            f"{visible(db.conn, sc.scope_id, 'v.seq')} ORDER BY seq",
            (sc.scope_id,),
        ).fetchall()
    return [(int(v), None if p is None else int(p), tr.parse_stamp(t)) for v, p, t in rows]


class Resolved(NamedTuple):
    """One request resolved: its targets, what the stages saw, and the time it names."""

    targets: Targets
    found: Described
    time: tr.TimeRef | None  # the time the request names (None: none)
    time_target: int | None  # the target a date bound gives (None: no bound applied)
    parsed: ps.ParsedRequest | None = None  # the request as read
    steps: dict[str, Any] | None = None  # what the operators did (None: none applied)


def resolve_request(
    db: Backend,
    sc: Scope,
    query: str,
    k: int,
    intent: str,
    rt: Retrieval,
    *,
    rerank: bool = True,
    stage: str | None = None,
    parsed: ps.ParsedRequest | None = None,
) -> Resolved:
    """Ranked restore targets for ``query``: the stages and reranker find the commits its
    content clause describes, the request's operators (:mod:`chronomem.parse`)
    move from the event found to the one meant, and :func:`restore_targets` maps them,
    except where the request names a time. A date bound ("since 1 July", "the last two
    weeks") gives the target from the writes' timestamps alone and is ranked first; a
    month ("the trip in June", "the April chat") keeps the described commits to those
    dated in that month, when any is."""
    p = vc.read_against(db, sc, ps.parse(query)) if parsed is None else parsed
    ref = p.time
    ops = p.operators
    hist: list[tuple[int, int | None, Any]] | None = None
    depth = k
    if ref is not None or ops or p.excluded:
        hist = dated_history(db, sc)
        if (ref is not None and ref.kind == "month") or ops or p.excluded:
            depth = max(k, MONTH_DEPTH)
    found = describe_request(db, sc, p.clause, depth, rt, rerank=rerank, stage=stage)
    ranked = found.ranked
    bound: int | None = None
    steps: dict[str, Any] | None = None
    if rt.meaning is not None and rerank:
        ranked, read = reread(db, sc, p, ranked, rt, rt.meaning)
        if read is not None:
            steps = {"meaning": read}
    if hist is not None:
        day = {v: d for v, _, d in hist}
        if ref is not None and ref.kind == "month":
            span = tr.month_days(ref, hist)
            if span is not None:
                inside = [(v, s) for v, s in ranked if day.get(v) and span[0] <= day[v] <= span[1]]
                ranked = inside or ranked
        elif ref is not None:
            bound = tr.bound_target(ref, hist, intent)
        if bound is None and (ops or p.excluded):

            def describe(clause: str) -> list[tuple[int, float]]:
                return describe_request(db, sc, clause, 8, rt, rerank=rerank).ranked

            def holders(term: str, vids: list[int]) -> set[int]:
                with db.lock:
                    index = lexical_index(db, sc, rt)
                    got = (
                        None
                        if index is None
                        else lx.scores_of(db, index, sc.scope_id, [term], vids)
                    )
                    if got is None:
                        got = db.descriptor_scores(sc.scope_id, [term], vids)
                held = {v for v, score in got.items() if score is not None}
                held = activity_holders(db, sc, term, held)
                # (a one-letter term is a possessive's "s", said in every other line)
                others = [
                    t for t in found.lexical_terms if t != term and t not in p.names and len(t) > 1
                ]
                return spoken_holders(db, sc, term, held, others)

            def telling(got: int, earlier: list[int]) -> int:
                return tc.told_by_named(db, sc, p.clause, got, earlier)

            ranked, steps = op.apply_operators(
                db,
                sc,
                p,
                ranked,
                op.Mentions(found.lexical or [], found.lexical_terms, holders),
                hist,
                intent,
                rt.episode_label,
                describe,
                telling if rt.episode_label else None,
            )
    if rt.episode_label and ranked and not (steps and "landed" in steps):
        ranked, said = tc.speaker_turn(db, sc, p.clause, ranked, rt.episode_label)
        if said is not None:
            # The evidence gates read the message retrieval matched, not its neighbour.
            steps = {**(steps or {}), "speaker": said, "event": said["from"]}
    if (
        intent == "undo"
        and rt.episode_label
        and ranked
        and found.lexical_terms
        and not (steps and ("landed" in steps or "speaker" in steps))
    ):
        top = ranked[0][0]

        # Read from the lexical stage's list and the chat's own texts: a score lookup in
        # the index per request would cost time that grows with the history.
        lexical = dict(found.lexical or [])

        def holds(term: str, vids: list[int]) -> set[int]:
            return held_by(db, sc, term, vids)

        def counts(terms: list[str]) -> dict[str, int]:
            return vc.document_counts(db, sc, terms)

        told = tc.first_telling(
            db, sc, top, rt.episode_label, found.lexical_terms, lexical, holds, counts
        )
        if told is not None:
            # The evidence gates read the message retrieval matched, as for a speaker move.
            steps = {**(steps or {}), "told": {"from": int(top), "commit": int(told)}}
            steps["event"] = int(top)
            rest = [(v, s) for v, s in ranked if v != told]
            ranked = [(told, float(ranked[0][1]) + 1.0), *rest]
    ranked = ranked[:k]
    found = found._replace(ranked=ranked)
    targets = restore_targets(db, sc, ranked, intent, query, rt.episode_label, rt.episodes)
    if bound is not None:
        top = max((s for _, s in targets.ranked), default=0.0)
        rest = [(v, s) for v, s in targets.ranked if v != bound]
        targets = targets._replace(ranked=[(bound, float(top) + 1.0), *rest])
    return Resolved(targets, found, ref, bound, p, steps)


def reread(
    db: Backend,
    sc: Scope,
    p: ps.ParsedRequest,
    ranked: list[tuple[int, float]],
    rt: Retrieval,
    stage: mn.MeaningStage,
) -> tuple[list[tuple[int, float]], dict[str, Any] | None]:
    """:func:`chronomem.meaning.repick` over this scope: descriptors from the backend, the
    pool every visible commit or, in a larger scope, the dense stage's best."""

    def descriptors(vids: list[int]) -> dict[int, str]:
        return dict(descriptors_of(db, sc.scope_id, vids))

    def pool(text: str, n: int) -> list[int]:
        with db.lock:
            vids = rt.dense.get(db, sc.scope_id, sc.gen).vids
        if vids.size <= n:
            return [int(v) for v in vids]
        return [v for v, _ in dense_stage(db, sc, content_query(text), n, rt)]

    return mn.repick(p, ranked, stage, descriptors, pool)


def held_by(db: Backend, sc: Scope, term: str, vids: list[int]) -> set[int]:
    """The commits of ``vids`` whose descriptor holds ``term`` as the lexical index
    tokenizes it (a few commits: their texts are read and tokenized here)."""
    want = tokenizer().tokens([term])[0]
    if len(want) != 1 or not vids:
        return set()
    rows = descriptors_of(db, sc.scope_id, vids)
    toks = tokenizer().tokens([d for _, d in rows])
    return {int(v) for (v, _), t in zip(rows, toks, strict=True) if want[0] in t}


def spoken_holders(
    db: Backend, sc: Scope, term: str, held: set[int], others: list[str]
) -> set[int]:
    """The commits of ``held`` whose speaker speaks of ``term``: a word only in a
    bracketed aside (a shared photo's description, "[shares a photo of a dvd cover with a
    castle]") is no time the topic came up, unless the words said hold another of the
    request's content words ``others`` (names left out: a speaker's name is in every
    line): "I made coconut milk icecream [shares a photo of a bowl of ice cream]" speaks
    of the ice cream. When no commit says it, ``held`` (a topic only ever shown is
    counted where it was shown)."""
    want = tokenizer().tokens([term])[0]
    if len(want) != 1 or not held:
        return held
    rows = descriptors_of(db, sc.scope_id, sorted(held))
    toks = tokenizer().tokens([tc.spoken(d) for _, d in rows])
    said = {int(v) for (v, _), t in zip(rows, toks, strict=True) if want[0] in t}
    if not said:
        return held
    other = {w[0] for w in tokenizer().tokens(others) if len(w) == 1}
    return said | {int(v) for (v, _), t in zip(rows, toks, strict=True) if other & set(t)}


def activity_holders(db: Backend, sc: Scope, term: str, held: set[int]) -> set[int]:
    """The commits of ``held`` that hold ``term`` as an activity when ``term`` is an -ing
    word the index's stem shortens (:func:`~chronomem.fts5_tokenizer.activity_stem`): a
    commit that holds only the thing named by the root ("boot camps" for "camping") is
    no mention of the activity. Any other ``term`` keeps ``held``."""
    stem = activity_stem(term)
    if stem is None or not held:
        return held
    rows = descriptors_of(db, sc.scope_id, sorted(held))
    return {int(v) for v, text in rows if holds_activity(text, stem)}
