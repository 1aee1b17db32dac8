"""The echo track's cell: load the dataset, count its streams, write the run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def run_echo_cell(cell: Any) -> Path:
    from chronobench.runner.cell import data_info, prepare_run_dir, write_results
    from chronobench.runner.datasets import load_run_data
    from chronobench.spec import run_id

    spec = cell.spec
    data = load_run_data(spec.dataset, Path(spec.paths.data_dir))
    rid = run_id(spec, data.manifest_sha256, data.queries_sha256)
    run_dir = prepare_run_dir(spec, rid)
    metrics = {"track": {"streams": len(data.streams)}}
    write_results(run_dir, spec, rid, metrics=metrics, k=int(spec.task.k),
                  dataset=data_info(data), rows=[], timings={})  # fmt: skip
    return run_dir
