"""R@1 of ChronoMem's request resolver on hand-written request files, per file and style.

A quick loop for resolver work, beside the main job: it composes the same configs as
``python -m chronobench run task=selection dataset.queries_file=F`` (so the streams,
embedder and reranker are the run's) and scores only the ``chronomem`` selector. The
published figures come from the main job; this script publishes nothing.

    python scripts/nl_eval.py data_builders/user_queries/locomo_v3_heldout.jsonl [--turn]
    python scripts/nl_eval.py data_builders/user_queries/locomo_v3_tuning.jsonl --turn --turn-gold evidence

A file of requests written to be refused (`"expect": "refuse"`) is scored as the main job
scores it (refusing is right) and printed as the count refused, per style.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

# This checkout first: a virtual environment's installed chronomem (a wheel) goes stale
# as the checkout is edited, and Python puts the script's folder on the path, not it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--turn", action="store_true", help="turn granularity (default: session)")
    ap.add_argument(
        "--turn-gold",
        choices=["session", "evidence"],
        default="session",
        help="turn granularity: v* at the session's edge (default) or at the evidence turns "
        "of the file's notes (dataset.turn_gold)",
    )
    ap.add_argument("--selector", default="chronomem")
    ap.add_argument(
        "--meaning",
        help="ChronoMem's meaning stage: 'mpnet' (install-model mpnet) or a model name or path",
    )
    ap.add_argument(
        "--meaning-runtime",
        default="torch",
        help="how the meaning model runs (default torch: float32; torch_f64 is slow for mpnet)",
    )
    ap.add_argument("--misses", action="store_true", help="print every miss")
    ap.add_argument(
        "--plans", action="store_true", help="also count real requests the NL rollback refuses"
    )
    ap.add_argument("--styles-from", type=Path, help="read each request's style from this file")
    ap.add_argument(
        "--refusals",
        type=Path,
        help="requests that must be refused (sample_id, query, style): rollback and forget",
    )
    args = ap.parse_args(argv)

    from chronobench.audit.data import compose_spec
    from chronobench.protocols import public_writes
    from chronobench.runner.components import resolve_cell

    gran = "locomo_turn" if args.turn else "locomo_session"
    for path in args.files:
        extra = [f"dataset.turn_gold={args.turn_gold}"] if args.turn else []
        extra.append(f"selectors=[{args.selector}]")
        if args.meaning:
            extra.append(f"+retriever.meaning={args.meaning}")
            extra.append(f"+retriever.meaning_runtime={args.meaning_runtime}")
        spec = compose_spec(
            [f"dataset={gran}", "task=selection", f"dataset.queries_file={path}", *extra]
        )
        cell = resolve_cell(spec)
        data = cell.load_data()
        stores = cell.build_store_provider()
        styles = {
            json.loads(line)["query"]: json.loads(line).get("style", "-")
            for line in (args.styles_from or path).read_text(encoding="utf-8").splitlines()
            if line.strip()
        }
        by_style: dict[str, list[float]] = defaultdict(list)
        refused_style: dict[str, list[float]] = defaultdict(list)
        refused_plans: list[int | str] = []
        started = time.perf_counter()
        for stream in data.streams:
            queries = data.queries_by_stream().get(stream.stream_id, [])
            if not queries:
                continue
            sel = cell.build_selector(args.selector, stores)
            ranked = sel.search(public_writes(stream), {q.query_id: q.text for q in queries}, 10)
            for q in queries:
                got = [v for v, _ in ranked.get(q.query_id, [])]
                refuse, hit = score_request(got, q)
                style = styles.get(q.text, "-")
                tally = refused_style if refuse else by_style
                tally["all"].append(hit)
                tally[style].append(hit)
                if args.plans:
                    refused_plans.append(_refused(stores, stream, q.text))
                if args.misses and not hit:
                    print(
                        f"  miss [{style}] {q.stream_id} gold={q.target_version} "
                        f"got={got[:3]} :: {q.text}"
                    )
        took = time.perf_counter() - started
        gran_name = "turn" if args.turn else "session"
        for line in report(path.stem, gran_name, by_style, refused_style):
            print(line)
        if args.plans:
            got = [r for r in refused_plans if r]
            why = ", ".join(f"{r}: {got.count(r)}" for r in sorted(set(got)))
            print(f"  NL rollback refused {len(got)} of {len(refused_plans)} requests ({why})")
        print(f"  ({took:.1f} s)")
        if args.refusals:
            refusals(args.refusals, data, stores)
        stores.close()
    return 0


def score_request(got: list[int], q: object) -> tuple[bool, float]:
    """(whether ``q`` is written to be refused, its R@1 as the main job scores it): a
    request marked ``expect: refuse`` scores 1 when the selector ranks nothing."""
    from chronobench.metrics import score_refusal, score_selection

    if q.meta.get("expect") == "refuse":  # type: ignore[attr-defined]
        return True, score_refusal(got)["recall_at_1"]
    return False, score_selection(got, q.target_version)["recall_at_1"]  # type: ignore[attr-defined]


def report(
    stem: str, gran: str, acted: dict[str, list[float]], refused: dict[str, list[float]]
) -> list[str]:
    """One line per style: R@1 over the requests to act on, and the count refused of the
    requests written to be refused (a refusal set has no R@1 of its own to print)."""
    out = []
    for style, hits in sorted(acted.items(), key=lambda kv: kv[0] != "all"):
        out.append(f"{stem} {gran} {style:28s} n={len(hits):3d} R@1={sum(hits) / len(hits):.4f}")
    for style, hits in sorted(refused.items(), key=lambda kv: kv[0] != "all"):
        label = "refuse:all" if style == "all" else style
        out.append(
            f"{stem} {gran} {label:28s} n={len(hits):3d} refused={int(sum(hits))}/{len(hits)}"
        )
    return out


def _refused(stores: object, stream: object, text: str) -> int | str:
    from chronobench.protocols import public_writes
    from chronobench.selectors import APP
    from chronomem.types import UncertainRequestError

    ing = stores.get(public_writes(stream))  # type: ignore[attr-defined]
    try:
        ing.store.plan_rollback_by_nl_query(APP, ing.user, text)
    except UncertainRequestError as exc:
        msg = str(exc)
        reasons = ("names no content", "does not hold", "no content word", "ambiguous")
        return next((r for r in reasons if r in msg), "other")
    return 0


def refusals(path: Path, data: object, stores: object) -> None:
    """Share of ``path``'s probes refused, by kind, for rollback and for forget."""
    from chronobench.protocols import public_writes
    from chronobench.selectors import APP
    from chronomem.types import UncertainRequestError

    probes = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    by_sample = {s.stream_id.rsplit("/", 1)[-1]: s for s in data.streams}  # type: ignore[attr-defined]
    tally: dict[tuple[str, str], list[int]] = defaultdict(list)
    for probe in probes:
        stream = by_sample[probe["sample_id"]]
        ing = stores.get(public_writes(stream))  # type: ignore[attr-defined]
        for op in ("rollback", "forget"):
            try:
                if op == "rollback":
                    ing.store.plan_rollback_by_nl_query(APP, ing.user, probe["query"])
                else:
                    ing.store.plan_selective_undo(APP, ing.user, probe["query"])
                refused = 0
                print(f"  acted [{op} {probe['style']}] {probe['sample_id']} :: {probe['query']}")
            except UncertainRequestError:
                refused = 1
            tally[(op, probe["style"])].append(refused)
    for (op, kind), got in sorted(tally.items()):
        print(f"refused {op:8s} {kind:14s} {sum(got)}/{len(got)}")


if __name__ == "__main__":
    sys.exit(main())
