"""A non-editable wheel install runs the smoke experiment: configs/ and the tiny fixture
ship inside the wheel, and nothing reads the source checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, smoke_cells

_SOURCES = [
    "pyproject.toml",
    "setup.py",
    "README.md",
    "chronobench",
    "data_builders",
    "baselines",
    "configs",
    "chronomem",  # the store's own distribution: its wheel goes in beside the benchmark's
]


def _pip(*args: str, cwd: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", *args, "--quiet", "--disable-pip-version-check"],
        cwd=cwd,
        check=True,
        timeout=300,
    )


@pytest.mark.slow
def test_wheel_install_runs_the_smoke_experiment(tmp_path):
    # Build from a copy so the checkout gets no build/ folder.
    src = tmp_path / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "_shipped", "build")
    for name in _SOURCES:
        s = REPO_ROOT / name
        if s.is_dir():
            shutil.copytree(s, src / name, ignore=ignore)
        else:
            shutil.copy2(s, src / name)
    (src / "tests" / "fixtures").mkdir(parents=True)
    shutil.copy2(REPO_ROOT / "tests" / "fixtures" / "locomo_tiny.json", src / "tests" / "fixtures")
    dist = tmp_path / "dist"
    for folder in (".", "./chronomem"):  # "./": a bare name would be looked up on an index
        _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), folder, cwd=src)
    wheels = [next(dist.glob(f"{name}-*.whl")) for name in ("chronobench", "chronomem")]
    site = tmp_path / "site"
    # The two wheels alone into their own folder; their dependencies come from this venv.
    _pip("install", "--no-deps", "--target", str(site), *map(str, wheels), cwd=tmp_path)
    shutil.rmtree(src)

    work = tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "CHRONOBENCH_RESULTS": str(work / "results"),
        "CHRONOBENCH_DATA": str(work / "data"),
        "CHRONOBENCH_CACHE": str(work / "cache"),
    }
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import chronobench.paths as p, chronomem; print(p.__file__, p.config_dir(), "
            "chronomem.__file__)",
        ],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        check=True,
    ).stdout
    assert where.startswith(str(site)) and "_shipped" in where, where
    assert where.split()[-1].startswith(str(site)), where  # the store from its own wheel
    proc = subprocess.run(
        [sys.executable, "-m", "chronobench", "run", "experiment=smoke"],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = sorted((work / "results" / "runs").iterdir())
    assert len(runs) == len(smoke_cells())  # one run folder per suite cell
    assert all((r / "metrics.json").is_file() for r in runs)
    # Absolute paths of what was written, and per-cell elapsed time.
    assert f"wrote {runs[0]}" in proc.stdout or any(f"wrote {r}" in proc.stdout for r in runs)
    assert " s)" in proc.stdout
