"""RQ3's validity contract: last-session coverage of a rollback-consistent summary.

The headline (``last_session_coverage``, docs/metrics.md) counts the newest restored
session's new event words, less those the request states, in the first 150 words of the
summary, and is 0 when the summary leaks a later event. Everything here is scored by
:func:`~chronobench.metrics.score_probe` and aggregated by the runner's
:func:`~chronobench.runner.metrics_io.compute_metrics` (weighted means; cluster
bootstrap over conversations), on the LoCoMo session build's summary probes.

- **Oracle**: ChronoMem's summary path after restoring exactly v* (the gold action,
  replayed: :class:`~chronobench.tracks.summary.audit_texts.SummaryReplay`).
- **Curves**: the oracle's summary with the most frequent first-said words of k later
  sessions put first (one wrong action: one later session told); the state restored
  one session too early (one missed action: the headline's session is not restored).
- **Attacks**: request-blind restores (the registered floors, a sweep over fixed
  fractions of the stream); over-action (restoring k sessions too many, the whole
  stream); fixed texts built from the public writes (the review's construction: the
  most frequent words first said in each of the first S sessions, S = 2..15, two
  rankings; a few words of every session; the last sessions' words; the registered
  verbatim and content-free floors); surface rules (echoing the request, alone or
  before the oracle's own summary).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from chronobench.audit.contract import Attack, Curve, HeadlineAudit, Interval
from chronobench.audit.registry import AuditOptions
from chronobench.tracks.summary.audit_texts import FirstSaid, SummaryReplay, fit_budget

__all__ = ["HEADLINE", "audit"]

#: The metric field the audit checks.
HEADLINE = "last_session_coverage"
#: Conversations in the fast (test-suite) version.
FAST_STREAMS = 2
#: Words told per later session on the later-words curve.
LATER_WORDS = 10
#: The previous headline, reported beside the fixed-text attacks it lost to.
OLD_HEADLINE = "session_coverage"
#: The system whose interval the attacks must stay below (full mode).
SYSTEM = "chronomem"

Predict = Callable[[Any, Any], str]  # (query, summary probe) -> the summary


def audit(options: AuditOptions) -> list[HeadlineAudit]:
    """RQ3's one headline audit (fast: two conversations, small sweeps)."""
    data = _load(options)
    ctx = _Context(data)
    fast = options.fast
    oracle = ctx.stat(ctx.oracle)
    curves = [
        Curve(
            name="later sessions told",
            action=f"the {LATER_WORDS} most frequent first-said words of one session after "
            "v* put before the oracle's summary",
            points=[(k, ctx.score(ctx.later_words(k))) for k in range(0, 5)],
        ),
        Curve(
            name="restored too early",
            action="one session fewer restored (every earlier version lacks the newest "
            "session's words, so one step costs the whole headline)",
            points=[(k, ctx.score(ctx.shifted(-k))) for k in (0, 1)],
        ),
    ]
    fixed, old_best = _fixed_text(ctx, fast)
    attacks = _request_blind(ctx) + _over_action(ctx, fast) + fixed + _surface(ctx)
    interval, system, where = _interval(options, data, oracle)
    n_probes = len(ctx.probes)
    return [
        HeadlineAudit(
            track="rq3",
            headline="last-session coverage",
            system=system,
            interval=interval,
            oracle_name="chronomem_oracle (ChronoMem's summary path at exactly v*, replayed)",
            oracle_why="it restores exactly the gold version, so it holds every word of the "
            "headline's session and nothing said after v* (it cannot leak); any other "
            "version either lacks that session or may tell a later one, and copying the "
            "request adds nothing (its words are not counted)",
            oracle=oracle.mean,
            curves=curves,
            attacks=attacks,
            data=f"LoCoMo session, {len(data.streams)} conversations, {n_probes} summary "
            f"probes ({'fast' if fast else 'full'})",
            notes=[
                where,
                f"oracle {100 * oracle.mean:.1f} [{100 * oracle.ci_low:.1f}, "
                f"{100 * oracle.ci_high:.1f}] on {oracle.n} probes with a headline",
                f"on the old headline (session_coverage, every restored session) the "
                f"oracle scores {100 * ctx.score(ctx.oracle, OLD_HEADLINE):.1f} and the best "
                f"fixed text {100 * old_best.score:.1f} ({old_best.name})",
            ],
        )
    ]


class _Context:
    """The summary probes of a build, their replays and how a predictor is scored."""

    def __init__(self, data: Any) -> None:
        self.streams = {s.stream_id: s for s in data.streams}
        self.probes = [(q, p) for q in data.queries for p in q.probes if p.kind == "summary"]
        self.replays = {sid: SummaryReplay(s) for sid, s in self.streams.items()}
        self.said = {sid: FirstSaid(s) for sid, s in self.streams.items()}
        self._sessions = {
            sid: [int(w.labels.get("session", w.version)) for w in s.writes]
            for sid, s in self.streams.items()
        }

    def rows(self, predict: Predict) -> list[dict[str, Any]]:
        from chronobench.metrics import score_probe

        out = []
        for q, p in self.probes:
            text = predict(q, p)
            out.append(
                {
                    "kind": "probe",
                    "sample_id": f"probe/{q.query_id}/{p.probe_id}",
                    "query_id": q.query_id,
                    "stream_id": q.stream_id,
                    "gold_version": q.target_version,
                    "intent": q.intent,
                    "source": q.source,
                    "probe_kind": p.kind,
                    "category": None,
                    "selected_version": None,
                    "probe": p.model_dump(mode="json"),
                    "prediction": text,
                    "scores": score_probe(p, text),
                }
            )
        return out

    def stats(self, predict: Predict) -> Any:
        """Every probe field's statistics, as a run's metrics.json holds them."""
        from chronobench.runner.metrics_io import compute_metrics

        return compute_metrics(self.rows(predict)).probes.all

    def stat(self, predict: Predict, field: str = HEADLINE) -> Any:
        stats = self.stats(predict)
        if field not in stats:
            raise ValueError(f"rq3 audit: no probe has a {field!r} score; rebuild the data")
        return stats[field]

    def score(self, predict: Predict, field: str = HEADLINE) -> float:
        return float(self.stat(predict, field).mean)

    # Predictors ---------------------------------------------------------------------

    def oracle(self, q: Any, p: Any) -> str:
        return self.replays[q.stream_id].at(q.target_version, p.question)

    def shifted(self, k: int) -> Predict:
        return lambda q, p: self.replays[q.stream_id].at(q.target_version + k, p.question)

    def at_version(self, choose: Callable[[Any, int], int]) -> Predict:
        """Restore ``choose(query, n_writes)`` (it must not read the request's meaning)."""
        return lambda q, p: self.replays[q.stream_id].at(
            choose(q, self.replays[q.stream_id].n), p.question
        )

    def later_words(self, k: int) -> Predict:
        def predict(q: Any, p: Any) -> str:
            sessions = self._sessions[q.stream_id]
            newest = sessions[q.target_version - 1]
            later = sorted({s for s in sessions[q.target_version :] if s > newest})[:k]
            said = self.said[q.stream_id]
            head = [w for s in later for w in said.words(s, LATER_WORDS)]
            return fit_budget(head, self.oracle(q, p), _budget(p))

        return predict

    def fixed(self, sessions: int, rank: str, total: int = 150) -> Predict:
        """The same text for every query of a stream: ``total`` words split evenly over
        its first ``sessions`` sessions."""

        def predict(q: Any, p: Any) -> str:
            said = self.said[q.stream_id]
            return said.even_split(said.sessions[:sessions], total, rank)

        return predict

    def per_session(self, m: int, last: int | None = None) -> Predict:
        """``m`` words of every session (or of the last ``last`` sessions), fixed."""

        def predict(q: Any, p: Any) -> str:
            said = self.said[q.stream_id]
            chosen = said.sessions[-last:] if last else said.sessions
            return " ".join(w for s in chosen for w in said.words(s, m))

        return predict


def _budget(probe: Any) -> int:
    from chronobench.metrics.summary import SUMMARY_WORDS

    return int(probe.meta.get("word_budget") or SUMMARY_WORDS)


def _request_blind(ctx: _Context) -> list[Attack]:
    """The registered request-blind restore floors (their own version choice), and a
    prior over positions: every fixed fraction of the stream."""
    from baselines.restore_floors import (
        Fraction60Floor,
        Fraction75Floor,
        Fraction90Floor,
        RandomVersionFloor,
        VersionOneFloor,
    )

    out = []
    for cls in (VersionOneFloor, Fraction60Floor, Fraction75Floor, Fraction90Floor):
        choose = _registered_choice(cls, ctx)
        out.append(Attack(family="request_blind", name=cls.name, score=ctx.score(choose),
                          note="the registered floor's own version, then ChronoMem's reader"))  # fmt: skip
    choose = _registered_choice(RandomVersionFloor, ctx)
    out.append(Attack(family="request_blind", name=RandomVersionFloor.name,
                      score=ctx.score(choose), note="seeded per stream and request text"))  # fmt: skip
    for tenth in range(1, 11):
        pick = ctx.at_version(lambda q, n, f=tenth / 10: max(1, round(f * n)))
        out.append(Attack(family="request_blind", name=f"restore {10 * tenth}% of the stream",
                          score=ctx.score(pick)))  # fmt: skip
    return out


def _registered_choice(cls: type, ctx: _Context) -> Predict:
    """Restore what the registered floor ``cls`` chooses (its own ``choose``, given what
    it reads of itself in a run: the run seed, the stream's digest, its fraction)."""

    def choose(q: Any, n: int) -> int:
        me = SimpleNamespace(
            ctx=SimpleNamespace(params=SimpleNamespace(seed=0)),
            ingested=SimpleNamespace(digest=q.stream_id),
            fraction=getattr(cls, "fraction", None),
        )
        return int(cls.choose(me, n, q.text))

    return ctx.at_version(choose)


def _over_action(ctx: _Context, fast: bool) -> list[Attack]:
    """Restoring more than asked: k sessions too many, or the whole stream."""
    out = [
        Attack(family="over_action", name=f"restore {k} session(s) too many",
               score=ctx.score(ctx.shifted(k)))
        for k in (range(1, 4) if fast else range(1, 6))
    ]  # fmt: skip
    whole = ctx.at_version(lambda q, n: n)
    out.append(Attack(family="over_action", name="restore the whole stream (full history)",
                      score=ctx.score(whole), note="every candidate kept"))  # fmt: skip
    return out


def _fixed_text(ctx: _Context, fast: bool) -> tuple[list[Attack], Attack]:
    """One text per stream for every query, from the public writes (and the registered
    floors' texts). Also returns the best of them on the old headline."""
    members: list[tuple[str, Predict, str]] = []
    spans = (2, 3, 5, 10, 15) if fast else tuple(range(2, 16))
    for rank in ("session", "stream"):
        for s in spans:
            members.append((f"first {s} sessions, {rank}-ranked", ctx.fixed(s, rank),
                            "150 words split evenly, most frequent first-said first"))  # fmt: skip
    for m in (1, 2, 3, 5):
        members.append((f"{m} word(s) of every session", ctx.per_session(m), ""))
    for last in (2, 5, 10):
        members.append((f"last {last} sessions, 150 words",
                        ctx.per_session(max(1, 150 // last), last), ""))  # fmt: skip
    floor = "the registered floor's text"
    members += [
        ("floor_session1_words", lambda q, p: _leading(ctx, q, session1=True), floor),
        ("floor_stream_words", lambda q, p: _leading(ctx, q, session1=False), floor),
        ("floor_generic_words", lambda q, p: p.meta["floor_texts"].get("generic_words", ""), floor),
        ("floor_session_dates", lambda q, p: p.meta["floor_texts"].get("session_dates", ""), floor),
    ]
    out, old = [], []
    for name, predict, note in members:
        stats = ctx.stats(predict)
        before = float(stats[OLD_HEADLINE].mean) if OLD_HEADLINE in stats else 0.0
        said = f"old headline {100 * before:.1f}"
        out.append(Attack(family="fixed_text", name=name, score=float(stats[HEADLINE].mean),
                          note=f"{note}; {said}" if note else said))  # fmt: skip
        old.append(Attack(family="fixed_text", name=name, score=before))
    return out, max(old, key=lambda a: a.score)


def _leading(ctx: _Context, q: Any, *, session1: bool) -> str:
    """The first 150 words of session 1 (or of the stream), verbatim."""
    stream = ctx.streams[q.stream_id]
    first = stream.writes[0].labels.get("session")
    writes = [w for w in stream.writes if not session1 or w.labels.get("session") == first]
    return " ".join(" ".join(op.text for w in writes for op in w.ops if op.text).split()[:150])


def _surface(ctx: _Context) -> list[Attack]:
    """The request's own words: template requests describe the target session."""
    return [
        Attack(family="surface_rule", name="echo the request", score=ctx.score(lambda q, p: q.text),
               note="the request names the newest restored session's events"),
        Attack(family="surface_rule", name="the request, then the oracle's summary",
               score=ctx.score(lambda q, p: f"{q.text} {ctx.oracle(q, p)}"),
               note="copying the request on top of the right restore earns nothing"),
    ]  # fmt: skip


# Data and the headline interval ------------------------------------------------------


def _load(options: AuditOptions) -> Any:
    """The main job's LoCoMo session build, composed as a run composes it (fast: its
    first conversations only)."""
    from dataclasses import replace

    from chronobench.audit.data import load_data

    data = load_data(["dataset=locomo_session"], options)
    if not options.fast:
        return data
    keep = {s.stream_id for s in data.streams[:FAST_STREAMS]}
    return replace(
        data,
        streams=[s for s in data.streams if s.stream_id in keep],
        queries=[q for q in data.queries if q.stream_id in keep],
    )


def _interval(options: AuditOptions, data: Any, oracle: Any) -> tuple[Interval, str, str]:
    """ChronoMem's headline interval: its published metrics when they carry the
    headline, else its main-job samples re-scored against today's probes (fast: the
    oracle's own interval on the small data)."""
    if options.fast:
        iv = Interval(mean=oracle.mean, lo=oracle.ci_low, hi=oracle.ci_high, n=oracle.n)
        return iv, "chronomem_oracle", "fast: the attacks are compared with the oracle's interval"
    from chronobench.tracks.summary.audit_rescore import chronomem_interval

    return chronomem_interval(Path(options.results), data, SYSTEM, HEADLINE)
