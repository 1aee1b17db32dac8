"""Expected errors print one or two lines and exit 2; --traceback shows the stack; a
missing optional backbone package fails before any work."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # end to end: each test runs `python -m chronobench` in a subprocess


def _cli(args: list[str], tmp_path: Path, **env_extra: str) -> subprocess.CompletedProcess:
    env = {
        **{k: v for k, v in os.environ.items() if k != "CHRONOBENCH_DEBUG"},
        "CHRONOBENCH_RESULTS": str(tmp_path / "results"),
        "CHRONOBENCH_DATA": str(tmp_path / "data"),
        "CHRONOBENCH_CACHE": str(tmp_path / "cache"),
        **env_extra,
    }
    return subprocess.run(
        [sys.executable, "-m", "chronobench", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )


def _short_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def test_bad_config_key_and_bad_group_option(tmp_path):
    _short_error(_cli(["run", "experiment=single", "+system.bogus=1"], tmp_path), "system.bogus")
    _short_error(_cli(["run", "experiment=single", "system=nope"], tmp_path), "system")


def test_bad_queries_file(tmp_path):
    missing = tmp_path / "missing.jsonl"
    args = ["run", "experiment=single", "dataset=tiny", "task=selection"]
    _short_error(_cli([*args, f"dataset.queries_file={missing}"], tmp_path), "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not json\n")
    _short_error(_cli([*args, f"dataset.queries_file={bad}"], tmp_path), "bad.jsonl", "line 1")


def test_missing_run_folder_and_missing_data(tmp_path):
    _short_error(_cli(["score", str(tmp_path / "no-such-run")], tmp_path), "no-such-run")
    proc = _cli(
        ["run", "experiment=single", "task=selection"],
        tmp_path,
        CHRONOBENCH_LOCOMO=str(tmp_path / "absent" / "locomo10.json"),
    )
    _short_error(proc, "CHRONOBENCH_LOCOMO")


def test_unreachable_postgres_server_is_a_short_error(tmp_path):
    pytest.importorskip("psycopg")
    import socket

    with socket.socket() as sock:  # bound, then closed: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://alice:s3cret@127.0.0.1:{port}/bench"
    args = ["run", "experiment=single", "dataset=tiny", "task=selection", "store=postgres"]
    proc = _cli(args, tmp_path, CHRONOBENCH_PG_URL=url)
    _short_error(proc, f"postgresql://alice@127.0.0.1:{port}/bench", "start the server")
    assert "s3cret" not in proc.stderr + proc.stdout
    assert not (tmp_path / "results" / "runs").exists()  # refused before any cell


def test_traceback_flag_shows_the_stack(tmp_path):
    proc = _cli(["--traceback", "run", "experiment=single", "+system.bogus=1"], tmp_path)
    assert proc.returncode != 0 and "Traceback" in proc.stderr
    proc = _cli(["run", "experiment=single", "+system.bogus=1"], tmp_path, CHRONOBENCH_DEBUG="1")
    assert "Traceback" in proc.stderr


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_vllm_without_vllm_fails_before_any_work(tmp_path):
    # The main job's first cells need no backbone: the check still runs up front.
    proc = _cli(["run", "backbone=vllm_qwen25_7b"], tmp_path)
    _short_error(proc, "vllm", "pip install")
    assert not (tmp_path / "results" / "runs").exists()
    assert not (tmp_path / "data").exists()
