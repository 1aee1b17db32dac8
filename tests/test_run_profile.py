"""``run --profile`` / ``bench main-job``: wall, CPU and peak RSS per phase and per cell."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pytest

from chronobench.runner import usage


def _spin(seconds: float) -> int:
    end, n = time.process_time() + seconds, 0
    while time.process_time() < end:
        n += 1
    return n


def test_phases_and_worker_tasks_are_charged_where_they_ran() -> None:
    rec = usage.start()
    with usage.phase("here"):
        _spin(0.05)
    with usage.phase("workers"):
        rec.worker({"cpu": 3.0, "rss_mb": 5000.0})  # a worker task's report
    usage.cell("a cell", {"wall": 2.0, "cpu": 1.0, "rss_mb": 700.0}, note="3 embedded")
    here, workers = rec.phases
    assert here.cpu >= 0.04 and here.wall >= 0.0
    assert workers.cpu >= 3.0 and workers.rss_mb == 5000.0
    table = usage.report()
    assert "phase" in table and "a cell" in table and "3 embedded" in table
    last = table.splitlines()[-1]
    assert last.startswith("whole job:") and f"CPU/({usage.cpus()} x wall)" in last


def test_measured_reports_the_task_cpu_and_peak() -> None:
    result, used = usage.measured(_spin, 0.05)
    assert result > 0
    assert used["cpu"] >= 0.04 and used["wall"] >= used["cpu"] * 0.5 and used["rss_mb"] > 10


@pytest.mark.slow
def test_bench_main_job_on_the_tiny_fixture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from chronobench.commands import bench

    monkeypatch.setenv("CHRONOBENCH_RESULTS", str(tmp_path / "results-untouched"))
    parser = argparse.ArgumentParser()
    bench._main_job_arguments(parser)
    args = parser.parse_args(
        [
            "--results-dir",
            str(tmp_path / "kept"),
            "experiment=smoke",
            "jobs=2",
        ]
    )
    assert bench._main_job(args) == 0
    out = capsys.readouterr().out
    table = out[out.index("profile: ") :]
    for phase in ("compose", "resolve cells", "datasets", "cells"):
        assert f"\n{phase} " in table
    cells = [line for line in table.splitlines() if line.startswith("locomo-session")]
    assert len(cells) > 2 and all("embedded" in line for line in cells)
    assert "whole job:" in table
    assert any((tmp_path / "kept" / "runs").iterdir())
    assert not (tmp_path / "results-untouched").exists()
