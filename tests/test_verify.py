"""``python -m chronobench verify``: re-run a preset, compare every figure with the
published one (issue 28)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chronobench.leaderboard.verify import SAMPLES_FIGURE, Figure, compare, leaves, report
from tests.conftest import REPO_ROOT


def _run_folder(root: Path, run_id: str, metrics: dict, sha: str = "abc") -> Path:
    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps({"k": 5, "metrics": metrics}))
    (folder / "manifest.json").write_text(
        json.dumps({"run_id": run_id, "samples": {"sha256": sha}})
    )
    return folder


def test_leaves_name_every_scalar_by_its_path() -> None:
    got = dict(leaves({"b": {"x": 1.5, "y": [True, None]}, "a": "s"}))
    assert got == {"a": "s", "b.x": 1.5, "b.y.0": True, "b.y.1": None}


def test_compare_names_each_differing_figure(tmp_path: Path) -> None:
    pub, fresh = tmp_path / "res" / "published", tmp_path / "fresh"
    same = {"sel": {"r1": {"mean": 0.868, "ci_low": 0.8}}}
    _run_folder(pub, "run-a", same)
    _run_folder(fresh, "run-a", same)
    _run_folder(pub, "run-b", {"sel": {"r1": {"mean": 0.259}}, "n": 3})
    _run_folder(fresh, "run-b", {"sel": {"r1": {"mean": 0.263}}, "n": 3}, sha="def")
    _run_folder(fresh, "run-new", same)
    got = compare(tmp_path / "res", fresh)
    assert got.runs == ["run-a", "run-b", "run-new"] and got.unpublished == ["run-new"]
    assert {(f.run_id, f.name) for f in got.differing} == {
        ("run-b", "metrics.sel.r1.mean"),
        ("run-b", SAMPLES_FIGURE),
    }
    text = "\n".join(report(got))
    assert "run-a: 4 figures, identical" in text
    assert "metrics.sel.r1.mean: published 0.259, now 0.263 DIFFERS" in text
    assert "run-new: re-run, but no published run has this id" in text
    assert not got.ok


def test_a_stated_tolerance_is_per_figure(tmp_path: Path) -> None:
    pub, fresh = tmp_path / "res" / "published", tmp_path / "fresh"
    _run_folder(pub, "r", {"peer": {"r1": 0.500, "fid": 1.0}})
    _run_folder(fresh, "r", {"peer": {"r1": 0.488, "fid": 1.0}})
    assert not compare(tmp_path / "res", fresh).ok
    loose = compare(tmp_path / "res", fresh, {"metrics.peer.r1": 0.02})
    assert loose.ok and "within (tolerance 0.02)" in "\n".join(report(loose))
    assert not compare(tmp_path / "res", fresh, {"metrics.peer.r1": 0.01}).ok
    assert not Figure("r", "x", 1.0, True).ok and not Figure("r", "x", "a", "b", 9).ok


def test_nothing_rerun_is_not_a_pass(tmp_path: Path) -> None:
    assert not compare(tmp_path, tmp_path / "none").ok


_PRESET = """# @package _global_
defaults:
  - override /dataset: tiny
publish: true
progress: false
embedder:
  model: hash
suite:
  - [task=selection]
"""


def test_verify_reruns_a_preset_and_compares_with_what_was_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plug-in preset on the tiny fixture: published once, verified identical, then a
    published figure is altered and verify names it; a volatile preset is skipped."""
    from chronobench.commands import verify

    configs = tmp_path / "configs"
    (configs / "experiment").mkdir(parents=True)
    (configs / "experiment" / "tinypub.yaml").write_text(_PRESET)
    volatile = _PRESET.replace("publish: true", "publish: true\nreproducible: false")
    (configs / "experiment" / "tinyllm.yaml").write_text(volatile)
    monkeypatch.setenv("CHRONOBENCH_CONFIG_PATH", str(configs))
    monkeypatch.setenv("CHRONOBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.chdir(REPO_ROOT)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    first = tmp_path / "first"
    subprocess.run(
        [sys.executable, "-m", "chronobench", "run", "experiment=tinypub", "leaderboard=false",
         f"paths.results_dir={first}", f"paths.cache_dir={tmp_path / 'cache'}"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    (run,) = (first / "runs").iterdir()
    published = tmp_path / "results" / "published" / run.name
    published.mkdir(parents=True)
    for name in ("manifest.json", "metrics.json"):
        shutil.copy(run / name, published / name)

    assert verify.main(["--preset", "tinypub", "--results", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    assert f"{run.name}: " in out and "identical" in out and "re-run" in out

    metrics = json.loads((published / "metrics.json").read_text())
    name, value = next((k, v) for k, v in leaves(metrics) if isinstance(v, float))
    *path, last = name.split(".")
    node = metrics
    for key in path:
        node = node[key]
    node[last] = value + 0.25
    (published / "metrics.json").write_text(json.dumps(metrics))
    assert verify.main(["--preset", "tinypub", "--results", str(tmp_path / "results")]) == 1
    assert f"  {name}: published {value + 0.25!r}, now {value!r} DIFFERS" in capsys.readouterr().out

    assert verify.main(["--preset", "tinyllm"]) == 0
    assert "skipped (its config sets reproducible: false" in capsys.readouterr().out
    assert verify.main(["--preset", "nosuch"]) == 2
