"""The RQ4 cell runner (``task=selective``; docs/metrics.md "RQ4").

One cell is one row (``system.name``: a ChronoMem policy of
:data:`chronobench.systems.forgetting.POLICIES`, or a peer of
:data:`chronobench.systems.peers.PEERS` that has a delete) on LoCoMo turn streams. Each
stream is written once; then per anchor (:mod:`data_builders.selective`) a session on a
copy gets the request text, forgets its way, and is asked the stream's questions (the
same list for every request of the stream: its battery items with a gold answer at the
last version that the known set's reference reader answers there). The scorer labels the
questions per anchor (forget, keep after, keep other), sends only the scored ones to the
reader, and compares what the row removed (write ids no longer in its state) with the
anchor's required set. ``metrics.json`` holds, per request source (``user``: the
hand-written held-out set; ``template``) and over both, the mean and 95% cluster-bootstrap
interval of the headline (:func:`chronobench.metrics.forgetting.forget_headline`: per
anchor the harmonic mean of forget, keep, turn precision and recall), forget, leakage, keep, keep
after, keep other, turn precision and recall, and the anchors dropped and why. A peer runs
the ``delete_hits`` sweep (each request on a fresh copy per k) and is reported at its best
k, with the whole sweep under ``sweep``. ``samples.jsonl`` holds one row per anchor (per k
for a peer; ``kind: rq4``). A cell always runs from scratch (minutes); ``chronobench
score`` does not re-score these rows.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveInt, field_validator

from chronobench.errors import ConfigError

READER = "extractive"


class SelectiveParams(BaseModel):
    """``task.params`` of an RQ4 cell, with their defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # The first N LoCoMo conversations (None: all 10).
    streams: PositiveInt | None = None
    # Template anchors per stream (the held-out file's are all used).
    anchors_per_stream: NonNegativeInt = 8
    # The hand-written held-out requests (a JSONL path, relative to the checkout).
    heldout: str = "data_builders/user_queries/locomo_forget_heldout.jsonl"
    # Peers: the sweep of how many of their own search's top hits one request deletes
    # (a peer is reported at its best k, with the whole curve; one number: no sweep).
    delete_hits: tuple[PositiveInt, ...] = (1, 2, 3, 5, 10)

    @field_validator("delete_hits", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, int) else value


def row_names() -> list[str]:
    from chronobench.systems.forgetting import POLICIES
    from chronobench.systems.peers import PEERS

    return [*POLICIES, *PEERS]


def check_spec(spec: Any) -> None:
    """Reject a cell this runner would not read (dataset, row, reader; its ``task.params``
    are validated by :class:`SelectiveParams`)."""
    d = spec.dataset
    if d.name != "locomo" or d.granularity != "turn":
        raise ConfigError(
            f"task.kind=selective runs on dataset=locomo_turn, got {d.name}-{d.granularity}"
        )
    if spec.system.name not in row_names():
        raise ConfigError(
            f"system.name={spec.system.name!r}: RQ4 rows are {', '.join(row_names())}"
        )
    if spec.backbone.name != READER:
        raise ConfigError(
            f"backbone={spec.backbone.name!r}: RQ4 compares rows through backbone={READER}"
        )
    from chronobench.systems.peers import PEERS

    if spec.system.name in PEERS:
        from chronobench.systems.forgetting import supports_delete

        if not supports_delete(spec.system.name):
            raise ConfigError(
                f"system.name={spec.system.name!r}: this peer's API has no delete the adapter "
                "exposes (shown as 'not supported' in the RQ4 table); nothing to run"
            )


def build_parts(cell: Any, backbone: bool = True) -> list[str]:
    """The row's system over hash-vector stores (no data, no weights)."""
    from chronobench.protocols import GenerationParams
    from chronobench.systems import SystemContext
    from chronobench.systems.stores import StoreProvider

    stores = StoreProvider(embedder="hash")
    try:
        system, _ = _make_row(
            cell.spec, SystemContext(params=GenerationParams(), stores=stores), cell.params
        )
        system.close()
    finally:
        stores.close()
    return [type(system).__name__]


def _make_row(spec: Any, ctx: Any, p: SelectiveParams) -> tuple[Any, bool]:
    """The row's system, and whether its sessions come through the oracle channel."""
    from chronobench.systems.forgetting import (
        POLICIES,
        ChronoMemForgetSystem,
        PeerForgetSession,
    )
    from chronobench.systems.peers.system import PeerSystem
    from chronobench.systems.registry import ChronoMemOptions, RetrievalOptions

    name = spec.system.name
    if name in POLICIES:
        policy, oracle = POLICIES[name]
        # The track sets no system options: the models' defaults.
        return ChronoMemForgetSystem(ctx, policy, name, ChronoMemOptions()), oracle
    peer = type(f"PeerSystem[{name}]", (PeerSystem,), {"peer": name, "name": name})
    system = peer(ctx, RetrievalOptions())
    system.open_forget = lambda k: PeerForgetSession(system, k)
    return system, False


def _heldout_path(value: str) -> Path:
    from chronobench.paths import resolve_shipped

    return Path(resolve_shipped(value) or value)


def load_bench(spec: Any, p: SelectiveParams, backbone: Any) -> tuple[Any, list[Any], Any, str]:
    """The cell's data, its RQ4 streams (:func:`data_builders.selective.build`), the known
    set and its sha256."""
    from chronobench.runner.datasets import load_run_data
    from chronobench.runner.known import reference_known
    from data_builders import selective as rq4
    from data_builders.locomo.source import load_locomo, resolve_locomo_source

    data = load_run_data(spec.dataset, Path(spec.paths.data_dir))
    if p.streams:
        data.streams = data.streams[: p.streams]
    known, known_sha = reference_known(spec, data, backbone)
    records = {r["sample_id"]: r for r in load_locomo(resolve_locomo_source(spec.dataset.source))}
    heldout = rq4.read_heldout(_heldout_path(p.heldout))
    bench = rq4.build(
        data.streams, data.queries_by_stream(), records, heldout, known,
        per_stream=p.anchors_per_stream, seed=int(spec.seed),
    )  # fmt: skip
    return data, bench, known, known_sha


def reference_survivors(spec: Any, bench: list[Any], backbone: Any) -> dict[str, set[str]]:
    """Per anchor, the forget questions the known set's reference reader (ChronoMem with
    its default options, docs/protocol.md) still answers once the anchor's required set is
    gone: their fact survives in turns no annotation ties to the anchor, so no row is
    charged for them (the oracle's forget is 1 by construction)."""
    from chronobench.metrics import score_probe
    from chronobench.protocols import Question, public_writes
    from chronobench.runner.params import generation_params
    from chronobench.systems import SystemContext
    from chronobench.systems.forgetting import POLICIES, ChronoMemForgetSystem
    from chronobench.systems.registry import ChronoMemOptions
    from chronobench.systems.stores import StoreProvider
    from data_builders import selective as rq4

    stores = StoreProvider(embedder=spec.embedder.model_dump(), cache_dir=spec.paths.cache_dir)
    ctx = SystemContext(params=generation_params(spec), stores=stores)
    policy, _ = POLICIES["oracle_gold_turns"]
    system = ChronoMemForgetSystem(ctx, policy, "reference", ChronoMemOptions())
    out: dict[str, set[str]] = {}
    try:
        for fs in bench:
            system.ingest(public_writes(fs.stream))
            for a in fs.anchors:
                asked = rq4.label(fs.probes, a)["forget"]
                questions = [Question(f"q{i + 1}", q.question) for i, q in enumerate(asked)]
                session = system.open_oracle_session(a.gold)
                try:
                    session.forget(a.request)
                    got = {r.question_id: r for r in session.ask(questions)}
                finally:
                    session.close()
                replies = [got[q.question_id] for q in questions]
                need = [r.request for r in replies if r.answer is None]
                texts = iter(backbone.generate(need) or [])
                for q, r in zip(asked, replies, strict=True):
                    answer = r.answer if r.answer is not None else next(texts).text
                    if score_probe(q, answer).get("final_correct", 0.0) > 0:
                        out.setdefault(a.anchor_id, set()).add(str(q.meta.get("qa_id")))
    finally:
        system.close()
        stores.close()
    return out


def run_rows(
    system: Any, oracle: bool, bench: list[Any], backbone: Any, sweep: tuple[int, ...] = ()
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Every anchor of ``bench`` through one row (per k of ``sweep`` for a peer that
    forgets by deleting its top k hits); the rows' sample records and the drop counts."""
    from chronobench.protocols import Question, public_writes
    from data_builders import selective as rq4

    rows: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    for fs in bench:
        dropped.update(fs.dropped)
        probes = fs.probes
        questions = [Question(f"q{i + 1}", q.question) for i, q in enumerate(probes)]
        writes = public_writes(fs.stream)
        every = {int(w.write_id) for w in writes}
        system.ingest(writes)
        if hasattr(system, "see_questions"):
            system.see_questions([q.text for q in questions])
        for a in fs.anchors:
            lab = rq4.label(probes, a)
            for k in sweep or (None,):
                row = score_anchor(system, oracle, a, lab, probes, questions, every, backbone, k)
                rows.append(row if k is None else {**row, "delete_hits": k})
    return rows, dropped


def run_selective_cell(cell: Any) -> Path:
    """Run one RQ4 row (from scratch); returns its run folder."""
    from chronobench.hashing import file_sha256, sha256_text
    from chronobench.metrics.bootstrap import summarise
    from chronobench.runner.cell import data_info, prepare_run_dir, write_results
    from chronobench.runner.known import write_known
    from chronobench.runner.params import generation_params
    from chronobench.spec import run_id
    from chronobench.systems import SystemContext
    from chronobench.systems.stores import StoreProvider
    from chronobench.tracks.selective.metrics import required_counts, sweep_metrics
    from data_builders import restate
    from data_builders import selective as rq4

    spec = cell.spec
    p: SelectiveParams = cell.params
    t0 = time.perf_counter()
    backbone = cell.build_backbone()
    data, bench, known, known_sha = load_bench(spec, p, backbone)
    rq4.apply_survivors(bench, reference_survivors(spec, bench, backbone))
    rules = [rq4.TEMPLATES, restate.SAME_FACT, restate.MIN_SHARED, restate.ECHO]
    inputs = sha256_text(json.dumps([file_sha256(_heldout_path(p.heldout)), rules]))
    rid = run_id(spec, data.manifest_sha256, inputs)
    run_dir = prepare_run_dir(spec, rid)
    write_known(run_dir, known, known_sha)
    params = generation_params(spec)
    stores = StoreProvider(embedder=spec.embedder.model_dump(), cache_dir=spec.paths.cache_dir)
    system, oracle = _make_row(spec, SystemContext(params=params, stores=stores), p)
    sweep = tuple(p.delete_hits) if hasattr(system, "open_forget") else ()
    t1 = time.perf_counter()
    try:
        rows, dropped = run_rows(system, oracle, bench, backbone, sweep)
    finally:
        system.close()
        stores.close()
    metrics = sweep_metrics(rows, dropped, int(spec.seed), summarise, sweep)
    metrics["rq4"]["row"] = spec.system.name
    metrics["rq4"]["streams"] = len(bench)
    metrics["rq4"]["required"] = required_counts(bench)
    samples = run_dir / "samples.jsonl"
    tmp = samples.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(samples)
    timings = {"load_data_s": round(t1 - t0, 3), "total_s": round(time.perf_counter() - t0, 3)}
    write_results(
        run_dir, spec, rid, metrics=metrics, k=int(spec.task.k), dataset=data_info(data),
        rows=rows, timings=timings, known_sha256=known_sha,
        backbone_stats=dict(getattr(backbone, "stats", {}) or {}),
    )  # fmt: skip
    h = metrics["rq4"]["user"]["headline"]
    print(
        f"  {spec.system.name}: RQ4 held-out {100 * (h['mean'] or 0):.1f} "
        f"(n={h['n']}), all {100 * (metrics['rq4']['all']['headline']['mean'] or 0):.1f}, "
        f"dropped {dict(dropped)}, {timings['total_s']:.0f} s"
    )
    return run_dir


def score_anchor(
    system: Any,
    oracle: bool,
    a: Any,
    lab: dict[str, list[Any]],
    probes: list[Any],
    questions: list[Any],
    every: set[int],
    backbone: Any,
    k: int | None = None,
) -> dict[str, Any]:
    """One anchor through one row: forget, ask, score (the gold stays on this side;
    ``k``: a peer's delete_hits)."""
    from chronobench.metrics import score_probe
    from chronobench.metrics.forgetting import forget_headline, turn_precision, turn_recall

    if oracle:
        session = system.open_oracle_session(a.gold)
    elif k is not None:
        session = system.open_forget(k)
    else:
        session = system.open_session()
    try:
        meta = session.forget(a.request)
        replies = {r.question_id: r for r in session.ask(questions)}
        removed = every - session.remaining()
    finally:
        session.close()
    qid = {id(q): f"q{i + 1}" for i, q in enumerate(probes)}
    scored = [q for kind in ("forget", "keep_after", "keep_other") for q in lab[kind]]
    need = [replies[qid[id(q)]] for q in scored]
    texts = iter(backbone.generate([r.request for r in need if r.answer is None]) or [])
    answers = {
        id(q): (r.answer if r.answer is not None else next(texts).text)
        for q, r in zip(scored, need, strict=True)
    }
    right = {id(q): score_probe(q, answers[id(q)]).get("final_correct", 0.0) for q in scored}

    def mean(*kinds: str) -> float | None:
        got = [right[id(q)] for kind in kinds for q in lab[kind]]
        return sum(got) / len(got) if got else None

    forget = 1.0 - (mean("forget") or 0.0)
    keep = mean("keep_after", "keep_other")
    precision = turn_precision(removed, a.gold)
    recall = turn_recall(removed, a.gold)
    return {
        "kind": "rq4",
        "anchor": a.anchor_id,
        "stream": a.stream_id,
        "source": a.source,
        "request": a.request,
        "gold": sorted(a.gold),
        "own": sorted(a.own),
        "removed": sorted(removed)[:50],
        "n_removed": len(removed),
        "forget": forget,
        "leakage": 1.0 - forget,
        "keep": keep,
        "keep_after": mean("keep_after"),
        "keep_other": mean("keep_other"),
        "headline": forget_headline(forget, keep, precision, recall),
        "precision": precision,
        "recall": recall,
        "n_forget": len(lab["forget"]),
        "n_keep_after": len(lab["keep_after"]),
        "n_keep_other": len(lab["keep_other"]),
        "meta": {
            k: v for k, v in meta.items() if k in ("refused", "restored", "intent", "deleted")
        },
    }
