"""``python -m chronobench bench peers``: the memory systems people use, measured alike.

Two parts, every peer and ChronoMem through :class:`~chronobench.systems.peers.PeerMemory`:

- **LoCoMo** (session granularity): each stream is written once per peer; *own
  targeting* searches each rollback request with the peer's search and maps the best
  memory's write version through the request's intent (R@1 against v*); *oracle
  target* rolls a copy of the post-exposure folder back to each distinct v* the peer's
  own way and measures restore fidelity against the gold state at v*
  (:mod:`chronobench.metrics.fidelity`), and the rollback's latency.
- **Scale**: synthetic streams of N one-item writes (hash embedder): bytes on disk per
  write and the latency of a rollback to N/2. An ingest that passes ``--time-limit``
  stops there and reports the size it reached.

Figures print as tables; ``--out`` also writes them as JSON. Timings are the machine's
at that moment: compare rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_TARGETS = 4


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--peers", nargs="+", default=None, help="peer names (default: installed)")
    p.add_argument("--streams", type=int, default=None, help="first N LoCoMo streams only")
    p.add_argument(
        "--targets", type=int, default=DEFAULT_TARGETS, help="distinct v* per stream (spread)"
    )
    p.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    p.add_argument("--scale", type=int, nargs="*", default=[1000, 10000], help="writes")
    p.add_argument("--time-limit", type=float, default=120.0, help="seconds per scale ingest")
    p.add_argument("--skip-locomo", action="store_true")
    p.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")


def _peer_names(requested: list[str] | None) -> tuple[list[str], dict[str, str]]:
    from chronobench.systems.peers import PEER_MEMORIES, install_hint, missing_modules

    names = requested or [e.name for e in PEER_MEMORIES.entries()]
    run, skipped = [], {}
    for name in names:
        missing = missing_modules(name)
        if missing:
            skipped[name] = f"not installed ({', '.join(missing)}): {install_hint(name)}"
        else:
            run.append(name)
    return run, skipped


def _locomo(streams_limit: int | None) -> Any:
    from chronobench.runner.datasets import load_run_data
    from chronobench.spec import DatasetSpec

    spec = DatasetSpec(
        name="locomo",
        granularity="session",
        params={"max_queries_per_stream": 40, "max_answerable": 3, "max_future": 3},
        limit_streams=streams_limit,
    )
    # The runner's default data folder (config paths.data_dir).
    return load_run_data(spec, Path(os.environ.get("CHRONOBENCH_DATA", "data/built")))


def _ingest(name: str, folder: Path, embedding: Any, writes: list[Any], limit: float | None):
    """Write ``writes`` into a fresh peer; returns (seconds, writes done, bytes)."""
    from chronobench.systems.peers import create_peer

    peer = create_peer(name, folder, embedding)
    t0 = time.perf_counter()
    done = 0
    for w in writes:
        peer.add(w)
        done += 1
        if limit is not None and time.perf_counter() - t0 > limit:
            break
    seconds = time.perf_counter() - t0
    size = peer.storage_bytes()
    peer.close()
    return seconds, done, size


def locomo_rows(names: list[str], embedding: Any, data: Any, targets: int) -> dict[str, Any]:
    """Own-targeting R@1 and oracle-target restore fidelity per peer on LoCoMo."""
    from chronobench.metrics.fidelity import measure, spread, summarize
    from chronobench.systems.peers import create_peer
    from chronobench.systems.peers.base import folder_files, peer_writes
    from chronobench.systems.peers.targeting import own_target

    by_stream = data.queries_by_stream()
    out: dict[str, Any] = {}
    root = Path(tempfile.mkdtemp(prefix="chronobench-peers-"))
    try:
        for name in names:
            fid, lat, hits, n_queries, per_write, ingest_s, n_writes = [], [], 0, 0, [], 0.0, 0
            native = method = None
            for stream in data.streams:
                writes = peer_writes(stream)
                base = root / name / "base"
                seconds, _, size = _ingest(name, base, embedding, writes, None)
                ingest_s += seconds
                n_writes += len(writes)
                per_write.append(size / len(writes))
                queries = by_stream.get(stream.stream_id, [])
                peer = create_peer(name, base, embedding)
                for q in queries:
                    n_queries += 1
                    hits += int(own_target(peer, q.text).version == q.target_version)
                peer.close()
                wanted = sorted(
                    {q.target_version for q in queries if q.target_version < len(writes)}
                )
                for v in spread(wanted, targets):
                    work = root / name / "work"
                    shutil.copytree(base, work)
                    peer = create_peer(name, work, embedding)
                    t0 = time.perf_counter()
                    info = peer.rollback_to(v)
                    lat.append(time.perf_counter() - t0)
                    native, method = info.native, info.method
                    fid.append(measure(peer, writes, v, files=folder_files(work)))
                    peer.close()
                    shutil.rmtree(work)
                shutil.rmtree(base)
            row = summarize(fid)
            row.update(
                native=native,
                method=method,
                own_r1=100.0 * hits / max(n_queries, 1),
                queries=n_queries,
                rollback_ms=1000.0 * statistics.median(lat) if lat else float("nan"),
                bytes_per_write=statistics.mean(per_write) if per_write else float("nan"),
                ingest_ms_per_write=1000.0 * ingest_s / max(n_writes, 1),
            )
            out[name] = row
            print(f"  {name}: done ({len(fid)} rollbacks, {n_queries} requests)", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def synthetic_writes(n: int) -> list[Any]:
    """``n`` one-item writes with distinct, realistic-length texts."""
    from chronobench.systems.peers.base import PeerWrite

    topics = ["the trip", "a new job", "the dog", "piano lessons", "the garden", "a recipe"]
    return [
        PeerWrite(
            f"synthetic#{i}",
            i,
            f"2024-01-01T00:00:{i % 60:02d}",
            (
                (
                    f"s{i}",
                    f"Note {i}: the user talked about {topics[i % 6]} (detail {i * 7919 % 10007}).",
                ),
            ),
        )
        for i in range(1, n + 1)
    ]


def scale_rows(names: list[str], embedding: Any, sizes: list[int], limit: float) -> dict[str, Any]:
    """Bytes per write and rollback latency at each size."""
    from chronobench.metrics.fidelity import compare_state, gold_state
    from chronobench.systems.peers import create_peer

    out: dict[str, Any] = {}
    root = Path(tempfile.mkdtemp(prefix="chronobench-peers-scale-"))
    try:
        for name in names:
            for n in sizes:
                folder = root / f"{name}-{n}"
                writes = synthetic_writes(n)
                seconds, done, size = _ingest(name, folder, embedding, writes, limit)
                peer = create_peer(name, folder, embedding)
                target = done // 2
                t0 = time.perf_counter()
                peer.rollback_to(target)
                rollback_s = time.perf_counter() - t0
                missing, extra, stale = compare_state(peer.state(), gold_state(writes, target))
                peer.close()
                shutil.rmtree(folder, ignore_errors=True)
                out[f"{name}@{n}"] = {
                    "writes": done,
                    "complete": done == n,
                    "bytes_per_write": size / max(done, 1),
                    "ingest_ms_per_write": 1000.0 * seconds / max(done, 1),
                    "rollback_ms": 1000.0 * rollback_s,
                    "exact": not (missing or extra or stale),
                }
                print(f"  {name}@{n}: {done} writes in {seconds:.1f} s", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def _print_locomo(rows: dict[str, Any]) -> None:
    cols = ["own_r1", "exact", "missing", "extra", "stale", "leaked", "on_disk"]
    print("| peer | rollback | " + " | ".join(cols) + " | rollback ms | bytes/write |")
    print("|---" * (len(cols) + 5) + "|")
    for name, r in rows.items():
        kind = "native" if r["native"] else "emulated"
        vals = " | ".join(f"{r[c]:.1f}" for c in cols)
        print(f"| {name} | {kind} | {vals} | {r['rollback_ms']:.1f} | {r['bytes_per_write']:.0f} |")


def _print_scale(rows: dict[str, Any]) -> None:
    print("| peer@N | writes | bytes/write | ingest ms/write | rollback ms | exact |")
    print("|---|---|---|---|---|---|")
    for key, r in rows.items():
        w = f"{r['writes']}" + ("" if r["complete"] else " (time limit)")
        print(
            f"| {key} | {w} | {r['bytes_per_write']:.0f} | {r['ingest_ms_per_write']:.2f} "
            f"| {r['rollback_ms']:.1f} | {r['exact']} |"
        )


def main(args: argparse.Namespace) -> int:
    from chronobench.systems.peers.embedding import PeerEmbedding

    names, skipped = _peer_names(args.peers)
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    report: dict[str, Any] = {"skipped": skipped, "embedder": args.embedder}
    if not args.skip_locomo:
        data = _locomo(args.streams)
        print(
            f"LoCoMo session: {len(data.streams)} streams, {len(data.queries)} requests, "
            f"{args.targets} v* per stream, embedder {args.embedder}",
            flush=True,
        )
        report["locomo"] = locomo_rows(names, PeerEmbedding(args.embedder), data, args.targets)
        _print_locomo(report["locomo"])
    if args.scale:
        print(f"scale: {args.scale} one-item writes, hash embedder, {args.time_limit:.0f} s cap")
        report["scale"] = scale_rows(names, PeerEmbedding("hash"), args.scale, args.time_limit)
        _print_scale(report["scale"])
    if args.out is not None:
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(args.out)
    return 0
