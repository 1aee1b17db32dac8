"""Re-scoring a finished run from its ``samples.jsonl`` (the ``score`` command's work)."""

from __future__ import annotations

from pathlib import Path

from chronobench.errors import ResultsError
from chronobench.fileio import atomic_write_json, atomic_write_text
from chronobench.hashing import file_sha256
from chronobench.results.io import SampleLog
from chronobench.results.metrics_file import MetricsFile, RunMetrics
from chronobench.results.records import dump_record
from chronobench.results.schema import VOLATILE_FILE, load_run


def rescore_run(run_dir: Path, *, write_samples: bool = False) -> RunMetrics:
    """Re-score every sample of a run and rewrite its metrics.json (and, for an older
    results schema, its manifest in the current schema); returns the metrics."""
    from chronobench.runner.metrics_io import compute_metrics, rescore

    run_dir = Path(run_dir)
    samples = run_dir / "samples.jsonl"
    if not samples.is_file():
        raise ResultsError(
            f"{samples.resolve()}: missing; pass a run folder such as results/runs/<run-id> "
            "(published copies under results/published/ keep no samples)"
        )
    run = load_run(run_dir)  # validates (and migrates) manifest and metrics
    k = int(run.metrics.k)
    records = rescore(SampleLog(samples).read_records(), k=k)
    if write_samples:
        atomic_write_text(samples, "".join(dump_record(r) for r in records))
    from chronobench.runner.known import read_known

    metrics = compute_metrics(records, seed=int(run.manifest.seed), known=read_known(run_dir))
    if run.metrics.metrics.peer is not None and metrics.peer is None:
        # A peers run's restore fidelity and own targeting were measured on the peer's own
        # store while it ran; the samples cannot give them back, so they are kept as written.
        metrics.peer = run.metrics.metrics.peer
    atomic_write_json(run_dir / "metrics.json", MetricsFile.of(run.run_id, k, metrics).to_json())
    manifest = run.manifest.model_copy(
        update={"samples": run.manifest.samples.model_copy(update={"sha256": file_sha256(samples)})}
    )
    if run.volatile is not None and not (run_dir / VOLATILE_FILE).is_file():
        # An older schema kept these in the manifest, which is now rewritten without them.
        atomic_write_json(run_dir / VOLATILE_FILE, run.volatile.model_dump(mode="json"))
    atomic_write_json(run_dir / "manifest.json", manifest.model_dump(mode="json"))
    from chronobench.results.per_query import rewrite_query_file

    rewrite_query_file(run_dir, [r.to_row() for r in records], read_known(run_dir))
    return metrics
