"""End to end on the tiny fixture: run the smoke suite, resume, re-score, leaderboard,
and execute the analysis notebook on the result."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, smoke_cells

# End to end: `python -m chronobench` subprocesses run whole experiments.
pytestmark = pytest.mark.slow


def _run(args: list[str], env_extra: dict[str, str], cwd: Path = REPO_ROOT) -> str:
    import os

    env = {**os.environ, **env_extra}
    proc = subprocess.run(
        [sys.executable, "-m", "chronobench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("smoke")
    env = {
        "CHRONOBENCH_RESULTS": str(base / "results"),
        "CHRONOBENCH_DATA": str(base / "data"),
        "CHRONOBENCH_CACHE": str(base / "cache"),
    }
    out = _run(["run", "experiment=smoke"], env)
    return {"base": base, "env": env, "out": out, "results": base / "results"}


def test_smoke_writes_every_artifact(smoke):
    runs = sorted((smoke["results"] / "runs").iterdir())
    assert len(runs) == len(smoke_cells())  # one run folder per suite cell
    for run in runs:
        for name in ("config.yaml", "manifest.json", "samples.jsonl", "metrics.json"):
            assert (run / name).is_file(), f"{run.name} lacks {name}"
        manifest = json.loads((run / "manifest.json").read_text())
        for key in ("seed", "dataset", "schema_version"):
            assert key in manifest
        # What changes on every rerun lives beside the manifest, not in it.
        volatile = json.loads((run / "volatile.json").read_text())
        for key in ("git", "libraries", "timings"):
            assert key in volatile and key not in manifest
        assert manifest["dataset"]["manifest_sha256"]
        metrics = json.loads((run / "metrics.json").read_text())["metrics"]
        assert metrics["selection"] or metrics["probes"]["all"]
        for key in ("spec", "spec_sha256", "samples", "published"):
            assert key in manifest
        assert manifest["published"] is False  # the tiny fixture
    # Fixture runs never reach the leaderboard (not even a fresh, empty one).
    assert not (smoke["results"] / "LEADERBOARD.md").exists()
    assert "RC-QA" in smoke["out"] or "R@1" in smoke["out"]
    # Absolute paths of what was written, and per-cell elapsed time.
    for run in runs:
        assert f"wrote {run} (" in smoke["out"]


def test_samples_carry_what_rescoring_needs(smoke):
    run = next(p for p in (smoke["results"] / "runs").iterdir() if "__chronomem__" in p.name)
    rows = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert rows
    for r in rows:
        for key in (
            "request",
            "gold_version",
            "selected_version",
            "prediction",
            "probe",
            "scores",
            "prompt_sha256",
            "context",
        ):
            assert key in r


def test_oracle_restores_gold_and_floors_score_as_floors(smoke):
    runs = {p.name.split("__")[1]: p for p in (smoke["results"] / "runs").iterdir()}
    oracle = json.loads((runs["chronomem_oracle"] / "metrics.json").read_text())["metrics"]
    assert oracle["probes"]["restored"]["selected_exact"]["mean"] == 1.0
    abstain = json.loads((runs["always_abstain"] / "metrics.json").read_text())["metrics"]
    assert abstain["probes"]["all"]["future_abstain"]["mean"] == 1.0
    assert abstain["probes"]["all"]["future_leak"]["mean"] == 0.0


def test_rerun_resumes_without_new_work_and_rescore_is_identical(smoke):
    run = next(p for p in (smoke["results"] / "runs").iterdir() if "__rag_only__" in p.name)
    before = (run / "samples.jsonl").read_bytes()
    metrics_before = (run / "metrics.json").read_bytes()
    _run(["run", "experiment=smoke", "leaderboard=false"], smoke["env"])
    assert (run / "samples.jsonl").read_bytes() == before
    _run(["score", str(run)], smoke["env"])
    assert (run / "metrics.json").read_bytes() == metrics_before


def test_cells_in_two_worker_processes_write_the_same_bytes(smoke, tmp_path):
    """``jobs=2`` (chronobench.runner.parallel): every run folder's files equal the
    sequential run's, byte for byte (the built data and caches are its own)."""
    env = {
        "CHRONOBENCH_RESULTS": str(tmp_path / "results"),
        "CHRONOBENCH_DATA": str(tmp_path / "data"),
        "CHRONOBENCH_CACHE": str(tmp_path / "cache"),
    }
    out = _run(["run", "experiment=smoke", "jobs=2"], env)
    assert "2 at a time" in out
    runs = sorted((smoke["results"] / "runs").iterdir())
    for run in runs:
        other = tmp_path / "results" / "runs" / run.name
        for name in ("config.yaml", "manifest.json", "samples.jsonl", "metrics.json"):
            assert (other / name).read_bytes() == (run / name).read_bytes(), f"{run.name}/{name}"
    assert len(list((tmp_path / "results" / "runs").iterdir())) == len(runs)


def test_resume_after_a_torn_samples_file(smoke, tmp_path):
    src = next(p for p in (smoke["results"] / "runs").iterdir() if "__prompt_only__" in p.name)
    lines = (src / "samples.jsonl").read_text().splitlines(keepends=True)
    full = "".join(lines)
    # Simulate a crash: half the rows kept plus a torn partial line.
    (src / "samples.jsonl").write_text("".join(lines[: len(lines) // 2]) + lines[-1][:7])
    _run(["run", "experiment=smoke", "leaderboard=false"], smoke["env"])
    resumed = (src / "samples.jsonl").read_text().splitlines()
    assert sorted(resumed) == sorted(full.splitlines())


def test_leaderboard_rebuild_is_byte_identical(smoke, tmp_path):
    # Render the smoke runs as if they were published (fixture runs never are).
    results = tmp_path / "results"
    shutil.copytree(smoke["results"] / "runs", results / "runs")
    for run in (results / "runs").iterdir():
        man = json.loads((run / "manifest.json").read_text())
        man["published"] = True
        (run / "manifest.json").write_text(json.dumps(man))
    _run(["leaderboard", "--results", str(results)], smoke["env"])
    md = results / "LEADERBOARD.md"
    csv = results / "LEADERBOARD.csv"
    first = (md.read_bytes(), csv.read_bytes())
    _run(["leaderboard", "--results", str(results)], smoke["env"])
    assert (md.read_bytes(), csv.read_bytes()) == first
    text = md.read_text()
    for label in (
        "BM25-only",
        "Dense-only",
        "Hybrid (RRF)",
        "ChronoMem",
        "Prompt-only",
        "Full-history",
        "RAG-only",
        "floor: always abstain",
        "floor: no memory",
    ):
        assert label in text


def test_notebook_executes_on_the_smoke_run(smoke, tmp_path):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    nb = jupytext.read(REPO_ROOT / "notebooks" / "analysis.py")
    import os

    os.environ["CHRONOBENCH_RESULTS"] = str(smoke["results"])
    os.environ["CHRONOBENCH_FIGURES"] = str(tmp_path / "fig")
    try:
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute(cwd=str(tmp_path))
    finally:
        os.environ.pop("CHRONOBENCH_RESULTS", None)
        os.environ.pop("CHRONOBENCH_FIGURES", None)
    assert (tmp_path / "fig" / "rq2_rcqa_vs_floors.png").is_file()
    assert (tmp_path / "fig" / "rq1_r1_by_style_and_source.png").is_file()


def test_user_query_file_is_scored_as_source_user(smoke, tmp_path):
    fixture = REPO_ROOT / "tests" / "fixtures" / "locomo_tiny.json"
    sample_id = json.loads(fixture.read_text())[0]["sample_id"]
    qfile = tmp_path / "queries.jsonl"
    qfile.write_text(
        json.dumps(
            {
                "sample_id": sample_id,
                "query": "undo everything after the first chat",
                "intent": "undo",
                "target_session": 1,
            }
        )
        + "\n"
    )
    env = dict(smoke["env"], CHRONOBENCH_RESULTS=str(tmp_path / "results"))
    _run(["run", "experiment=debug", f"dataset.queries_file={qfile}", "task=selection"], env)
    run = next((tmp_path / "results" / "runs").iterdir())
    rows = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    assert rows and {r["source"] for r in rows} == {"user"}
    shutil.rmtree(tmp_path / "results")


@pytest.mark.parametrize(
    "split,task", [("accurate_retrieval", "all"), ("long_range_understanding", "summary")]
)
def test_mab_cells_run_on_schema_faithful_fixtures(tmp_path, split, task):
    fixture = {
        "accurate_retrieval": "Accurate_Retrieval.jsonl",
        "long_range_understanding": "Long_Range_Understanding.jsonl",
    }[split]
    env = {
        "CHRONOBENCH_RESULTS": str(tmp_path / "results"),
        "CHRONOBENCH_DATA": str(tmp_path / "data"),
        "CHRONOBENCH_CACHE": str(tmp_path / "cache"),
    }
    _run(
        [
            "run",
            "experiment=single",
            f"dataset=mab_{split}",
            f"dataset.source={REPO_ROOT / 'tests' / 'fixtures' / 'mab' / fixture}",
            "dataset.params.chunk_size=40",
            f"task={task}",
            "progress=false",
        ],
        env,
    )
    run = next((tmp_path / "results" / "runs").iterdir())
    metrics = json.loads((run / "metrics.json").read_text())["metrics"]
    if task == "summary":
        assert metrics["probes"]["all"]["rouge1"]["n"] > 0
    else:
        assert metrics["selection"]["chronomem"]["all"]["recall_at_1"]["n"] > 0
        assert "substring_em" in metrics["probes"]["all"]
