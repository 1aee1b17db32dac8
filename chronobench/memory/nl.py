"""NL rollback with a confidence gate: plan (read-only), then apply only if confident.

Rule (measured on LoCoMo template and hand-written requests with
``python -m chronobench bench nl-confidence``): a request is applied only when

1. it has content words: tokens left after removing stopwords and the request
   vocabulary ("undo", "everything after", "the conversation where", ...). "*",
   "(((", NUL, emoji-only, whitespace and "undo that" have none;
2. the matched commit has evidence: lexical (a content word of the request matches
   the commit's indexed descriptor, stemmed, via FTS5) or dense (the cosine between
   the request's content and the commit's best descriptor window is at least
   ``DENSE_FLOOR``);
3. the top target is separated from the runner-up (the next-best distinct target):
   the commit behind the runner-up does not score the same as the matched commit in
   both stages (bm25 and cosine equal within ``TIE_GAP``: identical descriptors, so
   the order between them is arbitrary).

``confidence`` = evidence x separation, where evidence is 1 with lexical evidence
and rises linearly from 0 at ``DENSE_FLOOR`` to 1 at ``DENSE_FULL`` otherwise, and
separation is 0 for a tie, else the relative gap between the top and runner-up
final scores over ``SEP_FULL``, clipped to [``MIN_SEPARATION``, 1]. Rank fusion
scores are close by construction (0.8% apart for ranks 1+2 vs 1+1), so a close
call lowers the confidence but is not refused; only a tie is.
A request that fails a condition raises :class:`UncertainRequestError` and nothing
is written.

Measured (MiniLM + DeltaReranker): 0 of 512 real LoCoMo session requests and 0 of 152
turn requests refused, every content-free request refused; 29 of 50 off-topic session
requests still pass on a single shared common word (a known limit of rule 2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chronobench.memory import query as q
from chronobench.memory import validate as val
from chronobench.memory.commit import scope_tag
from chronobench.memory.sql import visible
from chronobench.memory.types import (
    RollbackMode,
    RollbackPlan,
    RollbackResult,
    UncertainRequestError,
)

# Cosine below which a dense-only match is noise: above most off-topic requests' cosines
# (median ~0.15) and below the MiniLM paraphrase test's; no real LoCoMo request needed
# the dense path (all had lexical evidence), so this is not fitted on real misses.
DENSE_FLOOR = 0.30
DENSE_FULL = 0.50  # cosine at which a dense-only match counts as full evidence
TIE_GAP = 1e-6  # stage-score difference at or below which two commits are tied
SEP_FULL = 0.005  # relative final-score gap at which separation counts as full
MIN_SEPARATION = 0.1  # separation of an untied but close call (confidence never 0)

# Request vocabulary (C2's rule set in query.py); read defensively, it is module-private.
_REQUEST_WORDS: frozenset[str] = getattr(q, "_REQUEST_WORDS", frozenset())


def content_tokens(query: str) -> list[str]:
    """The request's content words (stopwords and request vocabulary removed)."""
    return [t for t in q.tokens(q.content_query(query)) if t not in _REQUEST_WORDS]


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


class NLRollbackMixin:
    """``plan_rollback_by_nl_query`` and ``rollback_to_version_by_nl_query`` of ChronoMem."""

    def _match_evidence(self, sc: Any, matched: int, query: str, toks: list[str]) -> dict:
        """Lexical (bm25 of the content words, None if none match) and dense (max window
        cosine) evidence that version ``matched`` is what ``query`` describes."""
        conn = self.conn  # type: ignore[attr-defined]
        expr = q.fts_expression(" ".join(toks))
        with self._lock:  # type: ignore[attr-defined]
            row = (
                conn.execute(
                    "SELECT bm25(desc_fts, 0.0, 1.0) FROM desc_fts WHERE desc_fts MATCH ? AND "
                    "rowid = (SELECT vrow FROM versions WHERE scope_id = ? AND version_id = ?)",
                    (f'tag : "{scope_tag(sc[0])}" AND body : ({expr})', sc[0], matched),
                ).fetchone()
                if expr
                else None
            )
            dm = self._dense.get(conn, sc[0], sc[3])  # type: ignore[attr-defined]
        cosine = 0.0
        where = np.flatnonzero(dm.vids == matched)
        if where.size:
            i = int(where[0])
            stop = int(dm.starts[i + 1]) if i + 1 < dm.starts.size else dm.matrix.shape[0]
            qvec = self._embed_query(q.content_query(query))  # type: ignore[attr-defined]
            cosine = float(np.max(dm.matrix[int(dm.starts[i]) : stop] @ qvec))
        bm25 = None if row is None else -float(row[0])
        return {"lexical": row is not None, "bm25": bm25, "cosine": cosine}

    def _runner_commit(
        self, sc: Any, described: list, target: int, intent: str, query: str
    ) -> int | None:
        """The best described commit whose own restore target differs from ``target``."""
        for vid, score in described[1:]:
            mapped = self._targets(sc, [(vid, score)], intent, query)  # type: ignore[attr-defined]
            if mapped and mapped[0][0] != target:
                return int(vid)
        return None

    def plan_rollback_by_nl_query(
        self,
        app: str,
        user: str,
        query: str,
        *,
        intent: str | None = None,
        k: int = 5,
        mode: RollbackMode = "truncate",
    ) -> RollbackPlan:
        """What :meth:`rollback_to_version_by_nl_query` would do; writes nothing.

        Raises :class:`UncertainRequestError` when the request is not confident (see
        the module docstring of :mod:`chronobench.memory.nl` for the rule).
        """
        val.text(query, "query", empty=True)
        val.choice(intent, "intent", ("undo", "restore_to"), none_ok=True)
        val.integer(k, "k", minimum=1)
        val.choice(mode, "mode", ("truncate", "revert"))
        sc = self._require(app, user)  # type: ignore[attr-defined]
        toks = content_tokens(query)
        if not toks:
            raise UncertainRequestError(
                f"request {query[:80]!r} names no content (only symbols or request words "
                "such as 'undo that'); say what to undo, e.g. 'undo the move to Lisbon', or "
                "call rollback_to_version(app, user, version_id); nothing was changed"
            )
        intent = intent or q.detect_intent(query)
        described = self._described(app, user, query, k + 2)  # type: ignore[attr-defined]
        targets = self._targets(sc, described, intent, query)  # type: ignore[attr-defined]
        if not described or not targets:
            raise UncertainRequestError(f"no version matches {query[:80]!r}; nothing was changed")
        matched, (target, top) = described[0][0], targets[0]
        runner = (int(targets[1][0]), float(targets[1][1])) if len(targets) > 1 else None
        ev = self._match_evidence(sc, matched, query, toks)
        evidence = (
            1.0
            if ev["lexical"]
            else _clip((ev["cosine"] - DENSE_FLOOR) / (DENSE_FULL - DENSE_FLOOR))
        )
        gap = 1.0 if runner is None else (top - runner[1]) / max(abs(top), 1e-12)
        # Tied evidence: the request scores the runner-up's commit exactly as high in
        # both stages (identical descriptors), so the ranking order is arbitrary.
        other = self._runner_commit(sc, described, target, intent, query)
        tied = False
        if other is not None:
            ev2 = self._match_evidence(sc, other, query, toks)
            tied = abs(ev["cosine"] - ev2["cosine"]) <= TIE_GAP and (
                (ev["bm25"] is None and ev2["bm25"] is None)
                or (
                    ev["bm25"] is not None
                    and ev2["bm25"] is not None
                    and abs(ev["bm25"] - ev2["bm25"]) <= TIE_GAP * max(1.0, abs(ev["bm25"]))
                )
            )
        separation = 0.0 if tied else max(_clip(gap / SEP_FULL), MIN_SEPARATION)
        ev = {
            "lexical": ev["lexical"],
            "cosine": round(ev["cosine"], 4),
            "gap": round(float(gap), 6),
            "tied": tied,
            "content_words": toks[:12],
        }
        if evidence <= 0.0:
            raise UncertainRequestError(
                f"request {query[:80]!r}: no content word matches the best candidate "
                f"(version {matched}) and its dense similarity {ev['cosine']:.2f} is below "
                f"{DENSE_FLOOR}; rephrase with words from the memory, or preview candidates "
                "with resolve(); nothing was changed"
            )
        if separation <= 0.0:
            raise UncertainRequestError(
                f"request {query[:80]!r} is ambiguous: targets {target} and {runner[0] if runner else '-'} "
                "score the same; add detail that tells them apart, or pick one with "
                "rollback_to_version(); nothing was changed"
            )
        with self._lock:  # type: ignore[attr-defined]
            seq = self._seq_of(sc, target)  # type: ignore[attr-defined]
            discarded = [
                int(r[0])
                for r in self.conn.execute(  # type: ignore[attr-defined]
                    "SELECT version_id FROM versions v WHERE scope_id = ? AND seq > ? AND "
                    f"{visible(self.conn, sc[0], 'v.seq')} ORDER BY seq",  # type: ignore[attr-defined]
                    (sc[0], seq),
                )
            ]
        return RollbackPlan(
            query=query,
            intent=intent,
            matched_version=int(matched),
            target_version=int(target),
            confidence=round(evidence * separation, 4),
            runner_up=runner,
            discarded_versions=discarded,
            candidates=[(int(v), float(s)) for v, s in targets[:k]],
            mode=mode,
            evidence=ev,
        )

    def rollback_to_version_by_nl_query(
        self,
        app: str,
        user: str,
        query: str,
        *,
        mode: RollbackMode = "truncate",
        intent: str | None = None,
        k: int = 5,
        preview: bool = False,
    ) -> RollbackResult | RollbackPlan:
        """Resolve ``query`` to a target and restore it, if the match is confident.

        ``preview=True`` returns the :class:`RollbackPlan` and writes nothing (agents
        confirm before destroying state). Otherwise the plan is applied with
        :meth:`rollback_to_version` and a :class:`RollbackResult` (with confidence,
        runner-up and the versions a truncate discarded) is returned. Raises
        :class:`UncertainRequestError`, changing nothing, when not confident.
        """
        if not isinstance(preview, bool):
            raise TypeError(f"preview must be True or False, got {preview!r}")
        plan = self.plan_rollback_by_nl_query(app, user, query, intent=intent, k=k, mode=mode)
        if preview:
            return plan
        new_head = self.rollback_to_version(  # type: ignore[attr-defined]
            app, user, plan.target_version, mode=mode, reason=f"nl: {query[:200]}"
        )
        return RollbackResult(
            query,
            plan.intent,
            plan.matched_version,
            plan.target_version,
            new_head,
            mode,
            plan.candidates,
            confidence=plan.confidence,
            runner_up=plan.runner_up,
            discarded_versions=plan.discarded_versions if mode == "truncate" else [],
        )
