"""``chronomem`` is its own light distribution: its wheel, installed in a clean virtual
environment with nothing but its one dependency (numpy), runs a commit / NL undo /
selective forget / redact round trip and never imports the harness or a heavy library.

Offline: the wheel is built without build isolation from this venv's setuptools, and
numpy reaches the clean venv as this venv's own copy on a path file (so nothing is
downloaded and nothing else is visible)."""

from __future__ import annotations

import email
import importlib.metadata
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

# What `pip install chronobench` brings and `pip install chronomem` must not.
HEAVY = (
    "chronobench", "data_builders", "baselines", "hydra", "omegaconf", "datasets", "pyarrow",
    "rouge_score", "nltk", "pandas", "torch", "sentence_transformers", "transformers", "onnx",
    "onnxruntime", "pydantic", "psycopg", "google", "mcp",
)  # fmt: skip

ROUND_TRIP = r"""
import importlib.metadata, json, sys
import chronomem
from chronomem import ChronoMem

def write(mem, op, item, text):
    return mem.commit("app", "ann", [{"op": op, "item_id": item, "text": text}],
                      source="chat", reason="user said so")

out = {"file": chronomem.__file__}
with ChronoMem(sys.argv[1]) as mem:
    write(mem, "add", "city", "Ann lives in Oslo")
    write(mem, "update", "city", "Ann moved to Bergen in May")
    write(mem, "add", "pet", "Ann adopted a cat called Miso")
    write(mem, "add", "pin", "Ann's bank PIN is 4921")
    write(mem, "add", "color", "Ann's favourite colour is teal")
    undo = mem.rollback_to_version_by_nl_query("app", "ann", "undo the favourite colour teal")
    out["undo"] = [undo.matched_version, undo.target_version]
    out["after_undo"] = mem.snapshot("app", "ann")
    forget = mem.selective_undo_by_nl_query("app", "ann", "forget the move to Bergen")
    out["forget"] = forget.versions
    out["after_forget"] = mem.snapshot("app", "ann")
    out["redact"] = mem.redact("app", "ann", "4921", reason="a secret", by="text")["items"]
    out["history"] = [mem.snapshot("app", "ann", v.version_id) for v in mem.versions("app", "ann")]
    out["integrity"] = mem.check_integrity("app", "ann")
out["modules"] = sorted({m.split(".")[0] for m in sys.modules})
out["dists"] = sorted(d.metadata["Name"].lower() for d in importlib.metadata.distributions())
print(json.dumps(out))
"""


def _run(*args: str | Path, cwd: Path) -> str:
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _numpy_only(into: Path) -> Path:
    """A folder holding links to this venv's numpy (package, bundled libraries, metadata)
    and nothing else."""
    into.mkdir()
    dist = importlib.metadata.distribution("numpy")
    site = Path(str(dist.locate_file("")))
    tops = {Path(str(f)).parts[0] for f in dist.files or ()}
    for name in tops:
        if (site / name).exists() and not name.startswith(".."):
            (into / name).symlink_to(site / name)
    assert (into / "numpy").exists(), tops
    return into


@pytest.mark.slow
def test_the_wheel_alone_runs_the_round_trip_without_the_harness(tmp_path):
    src = tmp_path / "src" / "chronomem"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    shutil.copytree(REPO_ROOT / "chronomem", src, ignore=ignore)
    dist = tmp_path / "dist"
    _run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
        "--no-deps", "--no-build-isolation", "-w", dist, src, cwd=tmp_path,
    )  # fmt: skip
    wheel = next(dist.glob("chronomem-*.whl"))

    # The wheel's one unconditional requirement is numpy; the rest are extras.
    with zipfile.ZipFile(wheel) as zf:
        meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(zf.read(meta_name))
        names = zf.namelist()
    required = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert [r.split(">")[0].strip() for r in required] == ["numpy"], required
    assert {"minilm", "postgres", "adk", "mcp"} <= set(meta.get_all("Provides-Extra") or [])
    assert not [n for n in names if n.startswith(("chronobench/", "tests/"))]
    assert "chronomem/pyproject.toml" not in names  # the folder's build files stay out

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                     cwd=tmp_path).strip())  # fmt: skip
    (site / "numpy_only.pth").write_text(str(_numpy_only(tmp_path / "numpy_only")) + "\n")
    _run(
        sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
        "--disable-pip-version-check", "--no-deps", "--no-index", wheel, cwd=tmp_path,
    )  # fmt: skip

    script = tmp_path / "round_trip.py"
    script.write_text(ROUND_TRIP)
    # -I: no PYTHONPATH, no user site, no script folder: only the clean venv.
    out = json.loads(_run(python, "-I", script, tmp_path / "m.db", cwd=tmp_path))

    assert out["file"].startswith(str(site)), out["file"]
    assert out["dists"] == ["chronomem", "numpy"]
    assert not set(out["modules"]) & set(HEAVY), set(out["modules"]) & set(HEAVY)
    assert out["undo"] == [5, 4]  # the colour commit undone: HEAD back at v4
    assert "color" not in out["after_undo"] and out["after_undo"]["pin"]
    assert out["forget"] == [2]  # only the move is reverted; the later commits stay
    assert out["after_forget"] == {
        "city": "Ann lives in Oslo",
        "pet": "Ann adopted a cat called Miso",
        "pin": "Ann's bank PIN is 4921",
    }
    assert out["redact"] == ["pin"]
    assert not any("4921" in text for snap in out["history"] for text in snap.values())
    assert out["integrity"] == []
