"""RQ1's contract: version selection on the hand-written held-out requests.

The headline is R@1 at session granularity (ChronoMem on ``locomo_v3_heldout``). R@1
asks one thing of a selector, its top-1 version, so the oracle is the gold version and
every other pick is a miss: the error curves are the oracle with a share of its picks
moved off v*, and the attacks are selectors that never read the request (a fixed
position, a fixed fraction of the stream, a prior over positions learned from the tuning
set, a seeded random pick). Doing more than asked and fixed texts have no meaning for a
single pick; hand-written requests have no generator whose construction could be read.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chronobench.audit.contract import Attack, Curve, HeadlineAudit
from chronobench.audit.data import load_data, published_interval
from chronobench.audit.registry import AuditOptions
from chronobench.hashing import stable_hash
from chronobench.metrics import score_selection

__all__ = ["audit", "pick_score"]

HELDOUT = "data_builders/user_queries/locomo_v3_heldout.jsonl"
TUNING = "data_builders/user_queries/locomo_v3_tuning.jsonl"
FAST_STREAMS = 3
#: Shares of the queries (in tenths) whose pick the error curves move off v*.
TENTHS = (0, 1, 2, 3, 4, 5)

Pick = Callable[[Any, int], int]  # (query, n_versions) -> the version picked


def pick_score(queries: Sequence[Any], n_versions: Mapping[str, int], pick: Pick) -> float:
    """Mean R@1 of ``pick`` over ``queries`` through the RQ1 scorer."""
    if not queries:
        return 0.0
    total = 0.0
    for q in queries:
        chosen = pick(q, n_versions[q.stream_id])
        total += score_selection([chosen], q.target_version)["recall_at_1"]
    return total / len(queries)


def _wrong(q: Any, n: int, tenths: int, how: str) -> int:
    """The oracle's pick, moved off v* for a seeded ``tenths``/10 of the queries."""
    gold = int(q.target_version)
    if stable_hash(f"rq1-curve/{q.query_id}") % 10 >= tenths or n < 2:
        return gold
    if how == "adjacent":
        return gold + 1 if gold < n else gold - 1
    rng = random.Random(stable_hash(f"rq1-random/{q.query_id}"))
    return rng.choice([v for v in range(1, n + 1) if v != gold])


def _relative(v: int, n: int) -> float:
    return (v - 1) / (n - 1) if n > 1 else 0.0


def _at_fraction(fraction: float) -> Pick:
    return lambda q, n: 1 + round(fraction * (n - 1))


def _learned_priors(tuning: Sequence[Any], n_versions: Mapping[str, int]) -> dict[str, Pick]:
    """Request-blind pickers fitted on the tuning set's gold (public, never held out):
    its most frequent version number, and its most frequent tenth of the stream."""
    absolute = Counter(int(q.target_version) for q in tuning).most_common(1)
    tenth = Counter(
        min(9, int(10 * _relative(int(q.target_version), n_versions[q.stream_id])))
        for q in tuning
        if q.stream_id in n_versions
    ).most_common(1)
    out: dict[str, Pick] = {}
    if absolute:
        mode = absolute[0][0]
        out[f"tuning-set mode: version {mode}"] = lambda q, n: min(mode, n)
    if tenth:
        centre = (tenth[0][0] + 0.5) / 10
        out[f"tuning-set mode: {100 * centre:.0f}% of the stream"] = _at_fraction(centre)
    return out


def audit(options: AuditOptions) -> list[HeadlineAudit]:
    base = ["dataset=locomo_session", "task=selection"]
    data = load_data([*base, f"dataset.queries_file={HELDOUT}"], options)
    tuning = load_data([*base, f"dataset.queries_file={TUNING}"], options)
    streams = data.streams[:FAST_STREAMS] if options.fast else data.streams
    n_versions = {s.stream_id: s.n_versions for s in streams}
    queries = [q for q in data.queries if q.stream_id in n_versions]
    tune_n = {s.stream_id: s.n_versions for s in tuning.streams}

    curves = [
        Curve(
            name=f"{how} version for k/10 of the queries",
            action=f"one query in ten answered with {what}",
            points=[
                (
                    k,
                    pick_score(
                        queries, n_versions, lambda q, n, k=k, how=how: _wrong(q, n, k, how)
                    ),
                )
                for k in TENTHS
            ],
        )
        # R@1 charges any wrong pick alike, so a random wrong version gives the same
        # curve; the distance-aware companion on the board is Scope@k/2.
        for how, what in (("adjacent", "the next session"),)
    ]
    pickers: dict[str, Pick] = {
        "always version 1": lambda q, n: 1,
        "always the last version": lambda q, n: n,
        **{f"fixed {int(100 * f)}% of the stream": _at_fraction(f) for f in (0.25, 0.5, 0.75)},
        "seeded random version": lambda q, n: random.Random(
            stable_hash(f"rq1-blind/{q.query_id}")
        ).randint(1, n),
        **_learned_priors(tuning.queries, tune_n),
    }
    attacks = [
        Attack(family="request_blind", name=name, score=pick_score(queries, n_versions, pick))
        for name, pick in pickers.items()
    ]

    def headline(manifest: Mapping[str, Any]) -> bool:
        cell = manifest.get("cell", {})
        return (
            cell.get("queries") == "locomo_v3_heldout"
            and cell.get("granularity") == "session"
            and manifest.get("spec", {}).get("backbone", {}).get("name") == "extractive"
            and (cell.get("task") or {}).get("selection") is True
            # The main job's run, not a preset's with other selectors for the same table.
            and "chronomem" in (cell.get("selectors") or [])
        )

    interval = published_interval(
        options.results, headline, ("metrics", "selection", "chronomem", "all", "recall_at_1")
    )
    what = f"{len(queries)} requests over {len(streams)} conversations"
    return [
        HeadlineAudit(
            track="rq1",
            headline="R@1, hand-written held-out requests (locomo_v3_heldout, session)",
            system="ChronoMem",
            interval=interval,
            oracle_name="the gold version v*",
            oracle_why="R@1 is 1 exactly when the top-1 pick is v*; the oracle picks v* "
            "for every request, so no selector can score more.",
            oracle=pick_score(queries, n_versions, lambda q, n: int(q.target_version)),
            curves=curves,
            attacks=attacks,
            not_applicable={
                "over_action": "R@1 scores a single pick; a selector cannot do more than "
                "choose (restoring too much is RQ2's over-action family)",
                "fixed_text": "a selection is a version, not a text",
                "surface_rule": "the requests are hand-written, not generated: there is "
                "no construction rule to read off them; the request-reading floors are "
                "the board's BM25-, dense- and hybrid-only rows",
            },
            data=("fast: " if options.fast else "")
            + f"LoCoMo session, {what}; interval: the published main-job row",
        )
    ]
