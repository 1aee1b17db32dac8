"""Would a stage over the top few candidates generalise? Leave-one-conversation-out on dev.

A stage that re-picks among the reranker's top few chats (a recall that beats the
chat that tells the event, a paraphrase) can be fitted to the few misses of the
development files and still lose on a held-out set, which is then spent. This script
asks the question on the development files alone, before any held-out read:

1. For every request of the given files that names no time and has no operator (the
   requests the reranker alone decides), it records the top ``--top`` chats the store
   describes, each with a few interpretable features of its messages (``FEATURES``).
2. It scores a linear re-pick, ``reranker score + sum(w * feature)``, over a small
   weight grid: the best weights in sample, and leave one conversation out (fit the
   weights on the other conversations, count the hits on the one left out).

A stage is worth building (and a held-out read) only if the cross-validated count beats
the reranker's. The dump (``--dump``) is kept so the grid can be rerun without
building the stores again.

    python scripts/nl_stage_cv.py data_builders/user_queries/locomo_handwritten.jsonl \\
        data_builders/user_queries/locomo_v3_tuning.jsonl --dump /tmp/cands.json
    python scripts/nl_stage_cv.py --dump /tmp/cands.json   # the grid only

Never run it on a held-out file: it reads every request's gold and miss.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

# This checkout first: a virtual environment's installed chronomem (a wheel) goes stale
# as the checkout is edited, and Python puts the script's folder on the path, not it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# name -> weights tried. Each feature is read from the candidate's messages (one
# "add:" line each) against the request's content words; see ``features``.
FEATURES = ("best", "adjacent", "focus", "earlier")
GRID: dict[str, tuple[float, ...]] = {
    "best": (0.0, 0.5, 1.0),
    "adjacent": (0.0, 0.25, 0.5),
    "focus": (0.0, 0.05, 0.1, 0.2),
    "earlier": (0.0, 0.05, 0.1, 0.2),
}


def features(
    sims: Sequence[float], holds: Sequence[int], position: int, top_position: int
) -> dict[str, float]:
    """One candidate chat's features.

    ``sims``: each message's cosine to the request's content words; ``holds``: how many
    of those words each message holds; ``position``: the chat's place in time (the top
    candidate's: ``top_position``).

    - ``best``: the best message cosine (a paraphrase scores here, not lexically);
    - ``adjacent``: the better cosine of the best message's two neighbours. A chat that
      tells an event has the other speaker answer about it; a recall is often one line;
    - ``focus``: log(1 + messages holding two or more content words), how many messages
      the chat spends on the topic;
    - ``earlier``: 1 when the chat comes before the top candidate (an event is told
      before it is recalled).
    """
    if not sims:
        return dict.fromkeys(FEATURES, 0.0)
    bi = max(range(len(sims)), key=lambda i: sims[i])
    near = [sims[i] for i in (bi - 1, bi + 1) if 0 <= i < len(sims)]
    return {
        "best": float(sims[bi]),
        "adjacent": float(max(near, default=0.0)),
        "focus": math.log1p(sum(h >= 2 for h in holds)),
        "earlier": 1.0 if position < top_position else 0.0,
    }


def pick(row: dict[str, Any], weights: dict[str, float]) -> int | None:
    """The target of the candidate a linear re-pick chooses (ties: the reranker's order)."""
    best: tuple[float, int] | None = None
    chosen = None
    for rank, cand in enumerate(row["cands"]):
        score = cand["score"] + sum(w * cand["features"][k] for k, w in weights.items())
        key = (score, -rank)
        if best is None or key > best:
            best, chosen = key, cand["target"]
    return chosen


def hits(rows: Iterable[dict[str, Any]], weights: dict[str, float]) -> int:
    """How many rows' gold the re-pick chooses."""
    return sum(pick(r, weights) == r["gold"] for r in rows)


def weight_grid(grid: dict[str, Sequence[float]]) -> list[dict[str, float]]:
    """Every combination of ``grid``'s weights."""
    names = list(grid)
    return [dict(zip(names, vals, strict=True)) for vals in itertools.product(*grid.values())]


def _size(weights: dict[str, float]) -> float:
    return sum(abs(w) for w in weights.values())


def fit(rows: Sequence[dict[str, Any]], grid: dict[str, Sequence[float]]) -> dict[str, float]:
    """The grid's weights with the most hits on ``rows`` (ties: the smallest weights)."""
    return max(weight_grid(grid), key=lambda w: (hits(rows, w), -_size(w)))


def leave_one_out(
    rows: Sequence[dict[str, Any]], grid: dict[str, Sequence[float]]
) -> list[tuple[str, int, int, int, dict[str, float]]]:
    """Per conversation: (conversation, requests, reranker hits, hits of the weights
    fitted on the other conversations, those weights)."""
    out = []
    for conv in sorted({r["conversation"] for r in rows}):
        train = [r for r in rows if r["conversation"] != conv]
        test = [r for r in rows if r["conversation"] == conv]
        w = fit(train, grid)
        out.append((conv, len(test), hits(test, {}), hits(test, w), w))
    return out


def report(rows: Sequence[dict[str, Any]], grid: dict[str, Sequence[float]]) -> str:
    """The table this script prints."""
    lines = []
    base = hits(rows, {})
    ceiling = sum(any(c["target"] == r["gold"] for c in r["cands"]) for r in rows)
    same = sum(r["cands"][0]["target"] == r.get("pipeline") for r in rows)
    lines.append(
        f"requests {len(rows)}: reranker top-1 {base}, gold among the candidates {ceiling} "
        f"(top-1 target = the pipeline's for {same})"
    )
    w = fit(rows, grid)
    lines.append(f"in sample: {hits(rows, w)} with {w}")
    total = 0
    for conv, n, b, got, wc in leave_one_out(rows, grid):
        total += got
        lines.append(f"  {conv:28s} n={n:3d} reranker {b:3d}  left out {got:3d}  fitted {wc}")
    lines.append(f"leave one conversation out: {total} against the reranker's {base}")
    return "\n".join(lines)


# -- the candidates of the development files ----------------------------------------------


def dump(paths: Sequence[Path], top: int) -> list[dict[str, Any]]:
    """The plain requests of ``paths`` with their top candidates and features."""
    from chronobench.audit.data import compose_spec
    from chronobench.protocols import public_writes
    from chronobench.runner.components import resolve_cell
    from chronobench.selectors import APP
    from chronomem import parse as ps
    from chronomem.embedders import shared_cache, similarities
    from chronomem.query import content_query, tokens
    from chronomem.rerank import delta_lines

    rows: list[dict[str, Any]] = []
    for path in paths:
        spec = compose_spec(
            ["dataset=locomo_session", "task=selection", f"dataset.queries_file={path}"]
        )
        cell = resolve_cell(spec)
        data = cell.load_data()
        stores = cell.build_store_provider()
        for stream in data.streams:
            queries = data.queries_by_stream().get(stream.stream_id, [])
            if not queries:
                continue
            ing = stores.get(public_writes(stream))
            store = ing.store
            history = {v.version_id: v for v in store.versions(APP, ing.user)}
            for q in queries:
                p = ps.parse(q.text)
                if p.time is not None or p.operators or p.excluded:
                    continue  # a date bound or an operator decides these, not the ranking
                cq = content_query(p.clause)
                words = set(tokens(cq))
                # restore_to: the commits described, in the reranker's order and scores.
                got = store.resolve(APP, ing.user, q.text, top, intent="restore_to")
                cands = []
                for vid, score in got:
                    rec = history.get(vid)
                    if rec is None:
                        continue
                    own = rec.parent if p.intent == "undo" else vid
                    msgs = delta_lines(rec.descriptor)
                    vecs = shared_cache(store.embedder).encode([cq, *msgs])
                    sims = [float(s) for s in similarities(vecs[1:], vecs[0])]
                    holds = [len(words & set(tokens(m))) for m in msgs]
                    cands.append(
                        {
                            "target": ing.j_of.get(own) if own is not None else None,
                            "position": rec.seq,
                            "score": float(score),
                            "sims": sims,
                            "holds": holds,
                        }
                    )
                if not cands:
                    continue
                # The pipeline's own top-1 with the request's intent, to check the mapping.
                real = store.resolve(APP, ing.user, q.text, 1)
                for c in cands:
                    c["features"] = features(
                        c.pop("sims"), c.pop("holds"), c["position"], cands[0]["position"]
                    )
                rows.append(
                    {
                        "file": path.stem,
                        "conversation": q.stream_id,
                        "query": q.text,
                        "gold": q.target_version,
                        "pipeline": ing.j_of.get(real[0][0]) if real else None,
                        "cands": cands,
                    }
                )
        stores.close()
    return rows


def _write_json(path: Path, obj: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(obj, fh)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, help="development request files")
    ap.add_argument("--top", type=int, default=3, help="candidates a stage may re-pick among")
    ap.add_argument(
        "--dump", type=Path, help="candidates file: written from FILES, or read when none"
    )
    args = ap.parse_args(argv)
    if args.files:
        if any("heldout" in f.name for f in args.files):
            ap.error("held-out files are not read here: their golds and misses stay unseen")
        rows = dump(args.files, args.top)
        if args.dump:
            _write_json(args.dump, rows)
    elif args.dump and args.dump.exists():
        rows = json.loads(args.dump.read_text(encoding="utf-8"))
    else:
        ap.error("give development FILES, or --dump of an earlier run")
    print(report(rows, GRID))
    return 0


if __name__ == "__main__":
    sys.exit(main())
