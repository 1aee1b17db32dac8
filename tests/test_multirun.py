"""Scale-out: a joblib multirun runs cells in parallel processes that share the run
folders, the call cache and the embedding cache; the Slurm preset composes."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _chronobench(args: list[str], env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "chronobench", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, **env_extra},
        timeout=600,
    )


def _rows(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


@pytest.mark.slow
def test_joblib_multirun_two_workers(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    env = {
        "CHRONOBENCH_RESULTS": str(tmp_path / "results"),
        "CHRONOBENCH_DATA": str(tmp_path / "data"),
        "CHRONOBENCH_CACHE": str(tmp_path / "cache"),
    }
    # Two cells that both ingest (embedding cache) and both answer (call cache).
    args = [
        "run",
        "-m",
        "experiment=single",
        "dataset=tiny",
        "task=qa",
        "system=chronomem,rag_only",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "leaderboard=false",
        "progress=false",
    ]
    proc = _chronobench(args, env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Joblib.Parallel(n_jobs=2" in out and "launching 2 jobs" in out
    runs = sorted((tmp_path / "results" / "runs").iterdir())
    assert [r.name.split("__")[1] for r in runs] == ["chronomem", "rag_only"]
    for run in runs:
        metrics = json.loads((run / "metrics.json").read_text())
        assert metrics["metrics"]["probes"]["all"]
        assert (run / "manifest.json").is_file()
    cache = tmp_path / "cache"
    assert _rows(cache / "embeddings.sqlite", "vectors") > 0
    n_calls = _rows(cache / "llm_cache.sqlite", "generations")
    assert n_calls > 0

    # Rerunning the sweep resumes both cells: nothing new is embedded or generated.
    again = _chronobench(args, env)
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    assert _rows(cache / "llm_cache.sqlite", "generations") == n_calls


def test_slurm_preset_composes() -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    proc = _chronobench(
        [
            "run",
            "hydra/launcher=slurm",
            "experiment=single",
            "--cfg",
            "hydra",
            "-p",
            "hydra.launcher",
        ],
        {},
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "SlurmLauncher" in proc.stdout
    assert "gpus_per_node: 1" in proc.stdout


def test_slurm_preset_is_valid_yaml() -> None:
    """Checked without the plugin installed: the file parses and extends submitit_slurm."""
    import yaml

    cfg = yaml.safe_load((REPO_ROOT / "configs/hydra/launcher/slurm.yaml").read_text())
    assert cfg["defaults"] == ["submitit_slurm"]
    assert cfg["gpus_per_node"] == 1 and cfg["timeout_min"] > 0
