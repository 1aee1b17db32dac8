"""How often the NL-rollback confidence gate refuses real requests, and how right it is.

``python -m chronobench bench nl-confidence`` builds (or reuses) the LoCoMo streams,
ingests each into a ChronoMem store (MiniLM, offline DeltaReranker: the default
chronomem system), and for every template query and every hand-written request
(``data_builders/user_queries/*.jsonl``) runs :meth:`ChronoMem.plan_rollback_by_nl_query`.
It prints the share refused and R@1 (resolved target == gold v*) among accepted and
refused requests, then the refusal of content-free requests, which must be 100%.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

CONTENT_FREE = ["*", "(((", '"', "\x00", "🙂🙂", "   ", "undo that", "go back", "revert it"]
# Requests with content words that no LoCoMo conversation is about: how often the gate
# refuses them shows what the dense floor does (no target exists, so R@1 is undefined).
OFF_TOPIC = [
    "undo the part about quantum chromodynamics lectures",
    "forget the submarine purchase in Reykjavik",
    "roll back to before the cryptocurrency mining rig",
    "erase what I said about my tax audit in Zurich",
    "revert the note on the xylophone quartet rehearsal",
]
_ROOT = Path(__file__).resolve().parents[2]


def _queries(granularity: str) -> tuple[Any, list[tuple[str, Any]]]:
    from chronobench.data.io import load_built
    from data_builders import LOCOMO, build_dataset
    from data_builders.user_query_file import load_user_queries

    built = load_built(build_dataset(LOCOMO, granularity=granularity))
    out = [("template", q) for q in built.queries]
    for path in sorted((_ROOT / "data_builders" / "user_queries").glob("*.jsonl")):
        try:
            out += [(path.stem, q) for q in load_user_queries(path, built)]
        except Exception as exc:  # a request set for another dataset or granularity
            print(f"  (skipped {path.name}: {str(exc)[:100]})")
    return built, out


def evaluate(granularity: str, limit_streams: int | None = None) -> dict[str, Any]:
    """Plan every request of one granularity; returns per-source counts."""
    from chronobench.protocols import public_writes
    from chronobench.systems.base import APP
    from chronobench.systems.stores import StoreProvider
    from chronomem import DeltaReranker, UncertainRequestError

    built, queries = _queries(granularity)
    streams = {s.stream_id: s for s in built.streams[:limit_streams]}
    provider = StoreProvider(embedder="minilm", reranker=DeltaReranker(), max_cached=1)
    rows: list[dict[str, Any]] = []
    by_stream: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for source, q in queries:
        if q.stream_id in streams:
            by_stream[q.stream_id].append((source, q))
    for n, (sid, items) in enumerate(by_stream.items(), start=1):
        print(
            f"  [{granularity}] stream {n}/{len(by_stream)} {sid}: {len(items)} requests",
            flush=True,
        )
        ing = provider.get(public_writes(streams[sid]))
        for source, q in items:
            gold = ing.vid_of.get(q.target_version)
            row: dict[str, Any] = {"source": source}
            if q.meta.get("expect") == "refuse":
                row["expect_refuse"] = True
            try:
                plan = ing.store.plan_rollback_by_nl_query(APP, ing.user, q.text)
                row.update(refused=False, hit=plan.target_version == gold, conf=plan.confidence)
                row.update(plan.evidence)
            except UncertainRequestError as exc:
                ranked = ing.store.resolve(APP, ing.user, q.text, 1)
                row.update(refused=True, hit=bool(ranked) and ranked[0][0] == gold, why=str(exc))
            rows.append(row)
        for source, texts in (("content-free", CONTENT_FREE), ("off-topic", OFF_TOPIC)):
            for text in texts:
                try:
                    plan = ing.store.plan_rollback_by_nl_query(APP, ing.user, text)
                    rows.append({"source": source, "refused": False, "hit": False, **plan.evidence})
                except UncertainRequestError as exc:
                    rows.append({"source": source, "refused": True, "hit": False, "why": str(exc)})
    provider.close()
    return {"granularity": granularity, "rows": rows}


def report(result: dict[str, Any]) -> None:
    """Print refusal share and R@1 among accepted vs refused, per request source."""
    print(f"\n== LoCoMo {result['granularity']}: NL rollback confidence gate ==")
    print(f"{'source':28s} {'n':>5s} {'refused':>9s} {'R@1 accepted':>13s} {'R@1 refused':>12s}")
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in result["rows"]:
        groups[r["source"]].append(r)
    for source, rs in groups.items():
        acc = [r for r in rs if not r["refused"]]
        ref = [r for r in rs if r["refused"]]

        def r1(xs: list[dict]) -> str:
            return f"{100 * sum(x['hit'] for x in xs) / len(xs):.1f}%" if xs else "-"

        print(
            f"{source:28s} {len(rs):5d} {100 * len(ref) / len(rs):8.1f}% {r1(acc):>13s} "
            f"{r1(ref):>12s}"
        )
    # Requests written to be refused are not "real" requests with a target.
    real = [
        r
        for r in result["rows"]
        if r["source"] not in ("content-free", "off-topic") and not r.get("expect_refuse")
    ]
    acc = [r for r in real if not r["refused"]]
    if acc:
        lex = [r for r in acc if r.get("lexical")]
        # A date-bounded plan ("since 1 July") has the date as its evidence, not a match.
        timed = [r for r in acc if "time" in r]
        dense_only = [r for r in acc if not r.get("lexical") and "time" not in r]
        print(
            f"real requests: {len(acc)}/{len(real)} accepted, {len(lex)} with lexical "
            f"evidence; median confidence {statistics.median(r['conf'] for r in acc):.2f}; "
            f"ties refused {sum('ambiguous' in r.get('why', '') for r in real)}"
        )
        if timed:
            hit = sum(r["hit"] for r in timed)
            print(f"date-bounded accepted: {len(timed)} (R@1 {100 * hit / len(timed):.1f}%)")
        if dense_only:
            cos = sorted(r["cosine"] for r in dense_only)
            hit = sum(r["hit"] for r in dense_only)
            print(
                f"dense-only accepted: {len(cos)} (R@1 {100 * hit / len(cos):.1f}%), cosine "
                f"min {cos[0]:.2f} median {statistics.median(cos):.2f}"
            )
    off = [r for r in result["rows"] if r["source"] == "off-topic"]
    for r in off:
        if not r["refused"]:
            print(f"  off-topic accepted: lexical={r.get('lexical')} cosine={r.get('cosine')}")
    for r in real:
        if r["refused"]:
            print(f"  refused ({r['source']}): {r['why'][:150]}")


def main(granularities: list[str], limit_streams: int | None = None) -> int:
    """Run and print the report for each granularity."""
    for g in granularities:
        report(evaluate(g, limit_streams))
    return 0
