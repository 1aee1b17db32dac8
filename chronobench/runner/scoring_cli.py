"""``python -m chronobench score <run-dir>...``: recompute metrics from samples.jsonl."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from chronobench.runner.artifacts import RESULTS_SCHEMA_VERSION, SampleLog, atomic_write_json
from chronobench.runner.metrics_io import compute_metrics, rescore, summary_table


def rescore_run(run_dir: Path, *, write_samples: bool = False) -> dict:
    """Re-score every sample of a run and rewrite its metrics.json; returns the metrics."""
    samples = run_dir / "samples.jsonl"
    if not samples.exists():
        raise FileNotFoundError(
            f"{samples} does not exist; pass a run folder such as results/runs/<run-id>"
        )
    old = (
        json.loads((run_dir / "metrics.json").read_text())
        if (run_dir / "metrics.json").exists()
        else {}
    )
    k = int(old.get("k", 5))
    manifest_path = run_dir / "manifest.json"
    seed = json.loads(manifest_path.read_text()).get("seed", 0) if manifest_path.exists() else 0
    rows = rescore(SampleLog(samples).read(), k=k)
    if write_samples:
        from chronobench.runner.artifacts import atomic_write_text

        atomic_write_text(samples, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    metrics = compute_metrics(rows, seed=int(seed))
    atomic_write_json(
        run_dir / "metrics.json",
        {
            "schema_version": RESULTS_SCHEMA_VERSION,
            "run_id": run_dir.name,
            "k": k,
            "metrics": metrics,
        },
    )
    return metrics


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry."""
    parser = argparse.ArgumentParser(prog="chronobench score", description=__doc__)
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (results/runs/<id>)")
    parser.add_argument(
        "--write-samples",
        action="store_true",
        help="also rewrite per-sample scores in samples.jsonl",
    )
    args = parser.parse_args(argv)
    for run in args.runs:
        metrics = rescore_run(run, write_samples=args.write_samples)
        print(summary_table(run.name, metrics))
    return 0
