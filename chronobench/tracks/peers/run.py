"""The memory-systems track's cell runner (``task=peers``; docs/peers.md).

One cell is one memory system (``system.name``: a peer of
:data:`chronobench.systems.peers.PEERS`, or ``chronomem`` under the same interface) on
LoCoMo streams. Each stream is written into the system once; then, from copies of that
post-exposure folder:

- **own targeting**: every rollback request of the stream is searched with the system's
  own search (:func:`~chronobench.systems.peers.targeting.own_target`): R@1 against v*;
  the first ``rq2_queries_per_stream`` requests (all when null) are also rolled back the
  system's own way and answered by the run's reader (RQ2/RQ3 probes, the same rows and
  scoring as the benchmark task's);
- **oracle target**: ``targets`` distinct v* per stream (evenly spread) are rolled back
  the system's own way and its state is compared with the gold state at v*
  (:mod:`chronobench.metrics.fidelity`).

``metrics.json`` holds only what reruns reproduce; rollback latency and bytes on disk per
write are machine- and file-layout-dependent, so they go to the manifest's ``timings``
(``bench peers`` has the 1k/10k-write scale figures). A cell always runs from scratch.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, PositiveInt

from chronobench.errors import ConfigError
from chronobench.systems.registry import RetrievalOptions

READER = "extractive"


class PeersParams(BaseModel):
    """``task.params`` of a peers cell, with their defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # The first N LoCoMo conversations (None: all 10).
    streams: PositiveInt | None = None
    # Oracle-target rollbacks per stream (distinct v*, evenly spread).
    targets: PositiveInt = 2
    # Requests per stream rolled back and answered (RQ2/RQ3); None: all.
    rq2_queries_per_stream: PositiveInt | None = None


def _names() -> list[str]:
    from chronobench.systems.peers import PEER_MEMORIES

    return [e.name for e in PEER_MEMORIES.entries()]  # ChronoMem first, then the peers


def check_spec(spec: Any) -> None:
    """Reject a peers cell whose dataset, system or reader this runner would not read (its
    ``task.params`` are validated by :class:`PeersParams`)."""
    from chronobench.systems.peers import missing_modules

    d = spec.dataset
    if d.name != "locomo":
        raise ConfigError(
            f"task.kind=peers runs on LoCoMo (dataset=locomo_session), got {d.name!r}"
        )
    if spec.system.name not in _names():
        raise ConfigError(
            f"system.name={spec.system.name!r}: the peers track runs {', '.join(_names())}"
        )
    if spec.system.options:
        raise ConfigError(
            f"system options {sorted(spec.system.options)}: the peers track sets them itself "
            "(own targeting, then the oracle v*); set system.name only"
        )
    if spec.backbone.name != READER:
        raise ConfigError(
            f"backbone={spec.backbone.name!r}: the memory-systems table compares systems through "
            f"one reader, backbone={READER}"
        )
    if missing_modules(spec.system.name):
        from chronobench.errors import MissingDependencyError
        from chronobench.systems.peers import install_hint

        raise MissingDependencyError(
            f"system {spec.system.name!r} needs {', '.join(missing_modules(spec.system.name))}: "
            f"{install_hint(spec.system.name)}"
        )


def _system_class(name: str) -> type:
    from chronobench.systems.peers.system import PeerSystem

    return type(f"PeerSystem[{name}]", (PeerSystem,), {"peer": name, "name": name})


def build_parts(cell: Any, backbone: bool = True) -> list[str]:
    """The peer's system class (built without data; the reader is the extractive one)."""
    return [_system_class(cell.spec.system.name).__name__]


class _Measured:
    """Wraps a :class:`PeerSystem` for the runner's generation loop: after each stream's
    exposure, the own-target R@1 over all of the stream's requests (their text only) and
    the oracle-target rollbacks (through the oracle channel), measured on the session's
    peer against the gold state at v*."""

    def __init__(
        self, system: Any, streams: list[Any], all_queries: dict[str, list[Any]], targets: int
    ) -> None:
        self.system = system
        self.name = system.name
        self._streams = iter(streams)  # the streams run_generation ingests, in its order
        self.all_queries = all_queries
        self.targets = targets
        self.hits = 0
        self.requests = 0
        self.fidelity: list[Any] = []
        self.rollback_s: list[float] = []
        self.bytes_per_write: list[float] = []
        self.native: bool | None = None
        self.method = ""

    def ingest(self, writes: Any) -> None:
        from chronobench.metrics.fidelity import measure, spread
        from chronobench.protocols import OracleTarget
        from chronobench.systems.peers.base import folder_files, peer_writes
        from chronobench.systems.peers.targeting import own_target

        stream = next(self._streams)
        sysm = self.system
        sysm.ingest(writes)
        pw = peer_writes(stream)  # the gold side (the scorer's copy of the stream)
        self.bytes_per_write.append(sysm._base.storage_bytes() / max(len(pw), 1))
        queries = self.all_queries.get(stream.stream_id, [])
        for q in queries:
            self.requests += 1
            self.hits += int(own_target(sysm._base, q.text).version == q.target_version)
        wanted = sorted({q.target_version for q in queries if q.target_version < len(pw)})
        by_target = {q.target_version: q for q in reversed(queries)}
        for v in spread(wanted, self.targets):
            session = sysm.open_oracle_session(OracleTarget(target_version=v))
            t0 = time.perf_counter()
            outcome = session.rollback(by_target[v].text)
            self.rollback_s.append(time.perf_counter() - t0)
            self.native, self.method = outcome.meta.get("native"), outcome.meta.get("method", "")
            self.fidelity.append(measure(session.peer, pw, v, files=folder_files(session._folder)))
            session.close()

    def open_session(self) -> Any:
        return self.system.open_session()

    def close(self) -> None:
        self.system.close()


def _select_data(spec: Any, p: PeersParams) -> tuple[Any, dict[str, list[Any]]]:
    """The cell's data (``streams`` first streams) and every request per stream (own
    targeting scores them all); ``data.queries`` keeps the first
    ``rq2_queries_per_stream`` of each stream, the ones rolled back and answered."""
    from chronobench.runner.datasets import load_run_data

    # This track owns its dataset (resolve_cell leaves non-benchmark datasets to it).
    data = load_run_data(spec.dataset, Path(spec.paths.data_dir))
    if p.streams:
        keep = {s.stream_id for s in data.streams[: p.streams]}
        data.streams = [s for s in data.streams if s.stream_id in keep]
        data.queries = [q for q in data.queries if q.stream_id in keep]
    all_queries = data.queries_by_stream()
    if p.rq2_queries_per_stream:
        per: dict[str, int] = {}
        kept = []
        for q in data.queries:
            per[q.stream_id] = per.get(q.stream_id, 0) + 1
            if per[q.stream_id] <= p.rq2_queries_per_stream:
                kept.append(q)
        data.queries = kept
    return data, all_queries


def _measured(
    spec: Any, data: Any, all_queries: dict[str, list[Any]], targets: int
) -> tuple[_Measured, Any]:
    """The cell's system, wrapped to be measured (:class:`_Measured`) over the streams
    with probes, and the store provider to close after generation."""
    from chronobench.runner.params import generation_params
    from chronobench.systems import SystemContext
    from chronobench.systems.stores import StoreProvider

    # Only for its embedder: the run's MiniLM with the persistent text -> vector cache.
    stores = StoreProvider(embedder=spec.embedder.model_dump(), cache_dir=spec.paths.cache_dir)
    ctx = SystemContext(params=generation_params(spec), stores=stores)
    streams = [s for s in data.streams if any(q.stream_id == s.stream_id for q in data.queries)]
    return _Measured(
        _system_class(spec.system.name)(ctx, RetrievalOptions()), streams, all_queries, targets
    ), stores


def _generate(
    spec: Any, data: Any, measured: _Measured, stores: Any, backbone: Any, log: Any
) -> None:
    """Expose the system to each stream (measured on the way) and answer the probes
    through the run's generation loop."""
    from chronobench.runner.cell import generation_kinds
    from chronobench.runner.generation import run_generation

    try:
        run_generation(
            data,
            measured,
            backbone,
            log,
            set(),
            kinds=generation_kinds(spec),
            chunk_size=int(spec.backbone.chunk_size),
            progress=spec.progress,
            seed=int(spec.seed),
        )
    finally:
        stores.close()


def _peer_block(measured: _Measured, fid: dict[str, float], data: Any) -> dict[str, Any]:
    """``metrics.peer``: how it rolls back, own-target R@1, restore fidelity, sizes."""
    return {
        "rollback": {"native": measured.native, "method": measured.method},
        "own_target": {
            "recall_at_1": measured.hits / max(measured.requests, 1),
            "n": measured.requests,
        },
        "fidelity": {k: round(v, 6) for k, v in fid.items()},
        "streams": len(data.streams),
        "rq2_queries": len(data.queries),
    }


def _timings(measured: _Measured, t0: float, t1: float) -> dict[str, float]:
    """The manifest's timings. Volatile (machine load, file layout): never in
    metrics.json or the leaderboard."""
    return {
        "load_data_s": round(t1 - t0, 3),
        "total_s": round(time.perf_counter() - t0, 3),
        "rollback_ms_median": round(1000 * statistics.median(measured.rollback_s), 3)
        if measured.rollback_s
        else -1.0,
        "bytes_per_write": round(statistics.mean(measured.bytes_per_write), 1)
        if measured.bytes_per_write
        else -1.0,
    }


def _print_summary(
    spec: Any, metrics: Any, measured: _Measured, fid: dict, data: Any, timings: dict
) -> None:
    rc = metrics.probes.all.get("rc_qa") if metrics.probes is not None else None
    rq2 = rc.mean if rc is not None else None
    print(
        f"  {spec.system.name}: own R@1 {100 * metrics.peer['own_target']['recall_at_1']:.1f} "
        f"(n={measured.requests}), RC-QA {rq2 if rq2 is None else round(100 * rq2, 1)} "
        f"(n={len(data.queries)}), exact {fid.get('exact', float('nan')):.1f} "
        f"({len(measured.fidelity)} rollbacks), rollback {timings['rollback_ms_median']:.0f} ms"
    )


def run_peers_cell(cell: Any) -> Path:
    """Run one memory system's cell (from scratch); returns its run folder."""
    from chronobench.metrics.fidelity import summarize
    from chronobench.results.io import SampleLog
    from chronobench.runner.cell import cell_summary, data_info, prepare_run_dir, write_results
    from chronobench.runner.drilldown import write_cell_queries
    from chronobench.runner.known import RQ2_READER, reference_known, write_known
    from chronobench.runner.metrics_io import compute_metrics
    from chronobench.spec import run_id

    spec = cell.spec
    p: PeersParams = cell.params
    t0 = time.perf_counter()
    backbone = cell.build_backbone()
    data, all_queries = _select_data(spec, p)
    rid = run_id(spec, data.manifest_sha256, data.queries_sha256)
    run_dir = prepare_run_dir(spec, rid)
    (run_dir / "samples.jsonl").unlink(missing_ok=True)  # never resumes: see the docstring
    log = SampleLog(run_dir / "samples.jsonl")
    measured, stores = _measured(spec, data, all_queries, p.targets)
    t1 = time.perf_counter()
    _generate(spec, data, measured, stores, backbone, log)
    records = log.read_checked()
    known, known_sha = reference_known(spec, data, backbone, RQ2_READER)
    write_known(run_dir, known, known_sha, RQ2_READER)
    metrics = compute_metrics(records, seed=int(spec.seed), known=known)
    fid = summarize(measured.fidelity)
    metrics.peer = _peer_block(measured, fid, data)
    timings = _timings(measured, t0, t1)
    write_results(
        run_dir,
        spec,
        rid,
        metrics=metrics,
        k=int(spec.task.k),
        dataset=data_info(data),
        rows=records,
        timings=timings,
        backbone_stats=dict(getattr(backbone, "stats", {}) or {}),
        known_sha256=known_sha,
    )
    write_cell_queries(run_dir, rid, cell_summary(spec), data, records, known)
    _print_summary(spec, metrics, measured, fid, data, timings)
    return run_dir
