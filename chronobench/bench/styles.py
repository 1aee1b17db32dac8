"""R@1 / R@5 and refusals of the current request resolver, by the style a request is in.

``python -m chronobench bench styles --set NAME`` reads a hand-written set of
``data_builders/user_queries/`` (or a path) whose lines carry a ``style``, builds the
LoCoMo streams and the ChronoMem stores the way an RQ1 selection cell does (same embedder,
retriever and reranker; the built and embedding caches are shared with the main job),
and prints per style, with 95% cluster-bootstrap intervals over conversations:

- a rollback set (lines with ``query``): R@1 and R@5 of the ``chronomem`` selector (the
  RQ1 ChronoMem row) against the gold, and how many requests the NL rollback's confidence
  gate refuses (``plan_rollback_by_nl_query``). A line with ``"expect": "refuse"`` scores
  1 only when refused (by the gate for *refused*, by an empty ranking for the R@k columns);
  the selective-undo gate (``plan_selective_undo``) is asked too;
- a selective set (lines with ``request``, the RQ4 format): how often selective undo
  acts, how often it removes every gold turn, exactly the gold turns, and the mean share
  of removed turns that are gold (turn precision).

Granularity: a rollback set runs at session granularity unless its lines give
``evidence`` turns (then at turn granularity under the evidence gold); a selective set at
turn granularity. Nothing here changes a rule: it measures the one in the checkout.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

QDIR = Path(__file__).resolve().parents[2] / "data_builders" / "user_queries"
K = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="set_name",
        required=True,
        help="a set of data_builders/user_queries/ (file stem, e.g. locomo_nl_session_heldout) "
        "or a path to a JSONL file",
    )
    parser.add_argument(
        "--granularity",
        choices=["session", "turn"],
        default=None,
        help="rollback sets: override the granularity (default: session, or turn when the "
        "lines give evidence turns)",
    )
    parser.add_argument("--streams", type=int, default=None, help="first N conversations only")
    parser.add_argument("--json", default=None, help="also write the per-request rows here")


def set_path(name: str) -> Path:
    """A set's file: a path as given, else ``data_builders/user_queries/<name>.jsonl``."""
    p = Path(name)
    if p.is_file():
        return p
    shipped = QDIR / (name if name.endswith(".jsonl") else f"{name}.jsonl")
    if shipped.is_file():
        return shipped
    known = ", ".join(sorted(f.stem for f in QDIR.glob("*.jsonl")))
    raise SystemExit(f"bench styles: --set {name}: no such file; use a path or one of: {known}")


def _cell(granularity: str, overrides: Sequence[str]) -> Any:
    """The Components of an RQ1 selection cell at ``granularity``."""
    from hydra import initialize_config_dir

    from chronobench.paths import config_dir
    from chronobench.runner.components import resolve_cell
    from chronobench.runner.experiment import compose, expand_suite
    from chronobench.spec import spec_from_config

    args = ["experiment=single", f"dataset=locomo_{granularity}", "task=selection", *overrides]
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg, _ = compose(args)
        ((cfg, choices),) = expand_suite(cfg, args)
    return resolve_cell(spec_from_config(cfg, choices=choices), choices=choices)


def _refused(call: Any, *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    """``(True, why)`` when ``call`` refuses the request (UncertainRequestError), else
    ``(False, its plan)``."""
    from chronomem import UncertainRequestError

    try:
        return False, call(*args, **kwargs)
    except UncertainRequestError as exc:
        return True, str(exc)


def rollback_rows(path: Path, granularity: str, streams: int | None) -> list[dict[str, Any]]:
    """One row per request of a rollback set: its style, gold, ranking and refusals."""
    from chronobench.protocols import public_writes
    from chronobench.systems.base import APP

    recs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    evidence = any("evidence" in r for r in recs)
    extra = ["dataset.turn_gold=evidence"] if evidence and granularity == "turn" else []
    # The cell loads the file as a main-job cell does (its gold, under its turn gold).
    cell = _cell(granularity, [f"dataset.queries_file={path.resolve()}", *extra])
    data = cell.load_data()
    queries = data.queries
    stores = cell.build_store_provider()
    selector = cell.build_selector("chronomem", stores)
    by_stream: dict[str, list[Any]] = defaultdict(list)
    for q in queries:
        by_stream[q.stream_id].append(q)
    rows: list[dict[str, Any]] = []
    for n, stream in enumerate(data.streams[:streams], start=1):
        todo = by_stream.get(stream.stream_id, [])
        if not todo:
            continue
        print(
            f"  [{granularity}] {n}/{len(data.streams)} {stream.sample_id}: {len(todo)}", flush=True
        )
        writes = public_writes(stream)
        ranked = selector.search(writes, {q.query_id: q.text for q in todo}, top_k=max(K, 10))
        ing = stores.get(writes)
        for q in todo:
            versions = [v for v, _ in ranked.get(q.query_id, [])]
            gold = ing.vid_of.get(q.target_version)
            refused, plan = _refused(ing.store.plan_rollback_by_nl_query, APP, ing.user, q.text)
            row = {
                "stream": stream.sample_id,
                "style": q.meta.get("style", "-"),
                "request": q.text,
                "expect": q.meta.get("expect", "act"),
                "gold": q.target_version,
                "ranked": versions[:K],
                "refused": refused,
                "plan_hit": (not refused) and plan.target_version == gold,
            }
            if row["expect"] == "refuse":
                sel_refused, _ = _refused(
                    ing.store.plan_selective_undo, APP, ing.user, q.text, with_dependents="keep"
                )
                row["selective_refused"] = sel_refused
            rows.append(row)
    stores.close()
    return rows


def selective_rows(path: Path, streams: int | None) -> list[dict[str, Any]]:
    """One row per request of a selective (RQ4-format) set."""
    from chronobench.protocols import public_writes
    from chronobench.systems.base import APP
    from data_builders.selective import dialog_versions, read_heldout

    heldout = read_heldout(path)
    cell = _cell("turn", [])
    data = cell.load_data()
    stores = cell.build_store_provider()
    rows: list[dict[str, Any]] = []
    for n, stream in enumerate(data.streams[:streams], start=1):
        todo = [r for r in heldout if r["sample_id"] == stream.sample_id]
        if not todo:
            continue
        print(f"  [turn] {n}/{len(data.streams)} {stream.sample_id}: {len(todo)}", flush=True)
        ing = stores.get(public_writes(stream))
        where = dialog_versions(stream)
        for r in todo:
            gold = {where[d] for d in r["dialog_ids"] if d in where}
            refused, plan = _refused(
                ing.store.plan_selective_undo, APP, ing.user, r["request"], with_dependents="keep"
            )
            removed = set() if refused else {ing.j_of[v] for v in plan.versions if v in ing.j_of}
            rows.append(
                {
                    "stream": stream.sample_id,
                    "style": r.get("style", "-"),
                    "request": r["request"],
                    "gold": sorted(gold),
                    "removed": sorted(removed),
                    "refused": refused,
                }
            )
    stores.close()
    return rows


def _ci(values: list[float], clusters: list[str]) -> str:
    from chronobench.metrics.bootstrap import summarise

    s = summarise(values, clusters=clusters)
    if s["mean"] is None:
        return "-"
    return f"{100 * s['mean']:5.1f} [{100 * s['ci_low']:5.1f}, {100 * s['ci_high']:5.1f}]"


def _pct(flags: list[bool]) -> str:
    return f"{100 * sum(flags) / len(flags):5.1f}%" if flags else "-"


def _groups(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["style"]].append(r)
    return [*sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0])), ("all", rows)]


def rollback_table(rows: list[dict[str, Any]]) -> list[str]:
    """Per style: n, R@1 and R@5 with intervals, refused by the gate, gate R@1."""
    out = []
    act = [r for r in rows if r["expect"] == "act"]
    if act:
        out.append(
            f"{'style':12s} {'n':>4s}  {'R@1 [95% CI]':21s}  {'R@5 [95% CI]':21s}  "
            f"{'refused':>8s}  {'gate R@1':>8s}"
        )
        for style, rs in _groups(act):
            clusters = [r["stream"] for r in rs]
            r1 = [float(bool(r["ranked"]) and r["ranked"][0] == r["gold"]) for r in rs]
            r5 = [float(r["gold"] in r["ranked"][:K]) for r in rs]
            out.append(
                f"{style:12s} {len(rs):4d}  {_ci(r1, clusters):21s}  {_ci(r5, clusters):21s}  "
                f"{_pct([r['refused'] for r in rs]):>8s}  {_pct([r['plan_hit'] for r in rs]):>8s}"
            )
    refuse = [r for r in rows if r["expect"] == "refuse"]
    if refuse:
        out.append(
            f"{'style':12s} {'n':>4s}  {'refused: rollback gate':>22s}  "
            f"{'selective gate':>14s}  {'RQ1 (no candidate)':>18s}"
        )
        for style, rs in _groups(refuse):
            out.append(
                f"{style:12s} {len(rs):4d}  {_pct([r['refused'] for r in rs]):>22s}  "
                f"{_pct([r['selective_refused'] for r in rs]):>14s}  "
                f"{_pct([not r['ranked'] for r in rs]):>18s}"
            )
    return out


def selective_table(rows: list[dict[str, Any]]) -> list[str]:
    """Per style: n, acted, every gold turn removed, exactly the gold, turn precision."""
    out = [
        f"{'style':26s} {'n':>3s}  {'acted':>6s}  {'all gold removed [95% CI]':25s}  "
        f"{'exact':>6s}  {'turn P':>6s}"
    ]
    for style, rs in _groups(rows):
        clusters = [r["stream"] for r in rs]
        hit = [float(bool(r["gold"]) and set(r["gold"]) <= set(r["removed"])) for r in rs]
        exact = [r["removed"] == r["gold"] for r in rs]
        prec = [
            len(set(r["removed"]) & set(r["gold"])) / len(r["removed"]) for r in rs if r["removed"]
        ]
        p = f"{100 * sum(prec) / len(prec):5.1f}" if prec else "-"
        out.append(
            f"{style[:26]:26s} {len(rs):3d}  {_pct([not r['refused'] for r in rs]):>6s}  "
            f"{_ci(hit, clusters):25s}  {_pct(exact):>6s}  {p:>6s}"
        )
    return out


def main(args: argparse.Namespace) -> int:
    path = set_path(args.set_name)
    first = json.loads(next(x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()))
    if "request" in first:
        rows = selective_rows(path, args.streams)
        title, table = "selective undo (plan_selective_undo), turn granularity", selective_table
    else:
        recs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        gran = args.granularity or ("turn" if any("evidence" in r for r in recs) else "session")
        rows = rollback_rows(path, gran, args.streams)
        gold = "evidence gold" if gran == "turn" and any("evidence" in r for r in recs) else ""
        title = f"rollback, {gran} granularity{', ' + gold if gold else ''}"
        table = rollback_table
    print(f"\n== {path.stem}: {title} ({len(rows)} requests) ==")
    for line in table(rows):
        print(line)
    if args.json:
        from chronobench.fileio import atomic_write_text

        atomic_write_text(Path(args.json), json.dumps(rows, indent=1) + "\n")
    return 0
