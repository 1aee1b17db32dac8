"""scripts/publish_qwen60.sh refuses, before it changes anything, a completions file that
is not one reply from the model to each of the preset's 7,620 prompts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "publish_qwen60.sh"
N = 7620


def _write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _run(completions: Path, prompts: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("QWEN60_ALLOW_PLACEHOLDERS", None)
    return subprocess.run(
        ["bash", str(SCRIPT), str(completions), str(prompts)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _reply(i: int, **extra: object) -> dict[str, object]:
    return {"id": f"p{i}", "text": "Not mentioned", "model": "qwen2.5-1.5b", **extra}


@pytest.mark.parametrize(
    ("replies", "refusal"),
    [
        ([_reply(i) for i in range(N - 1)], "1 of 7,620 prompts have no reply"),
        ([_reply(i) for i in range(N)] + [_reply(0)], "a second reply to this prompt"),
        ([_reply(i) for i in range(N - 1)] + [_reply(N - 1, placeholder=True)], "placeholders"),
        ([_reply(i) for i in range(N - 1)] + [_reply(N - 1, model="smollm2")], "not qwen2.5"),
        ([_reply(i) for i in range(N)] + [_reply(N)], "answer no prompt"),
    ],
    ids=["missing", "twice", "placeholder", "other-model", "extra"],
)
def test_the_publish_script_refuses_an_incomplete_or_foreign_file(
    tmp_path: Path, replies: list[dict[str, object]], refusal: str
) -> None:
    prompts = _write(tmp_path / "prompts.jsonl", [{"id": f"p{i}"} for i in range(N)])
    completions = _write(tmp_path / "completions.jsonl", replies)
    before = subprocess.run(
        ["git", "status", "--porcelain"], cwd=REPO_ROOT, capture_output=True, text=True
    ).stdout
    done = _run(completions, prompts)
    assert done.returncode == 1, done.stdout + done.stderr
    assert refusal in done.stderr
    assert "2/6" not in done.stdout  # refused at the first step
    after = subprocess.run(
        ["git", "status", "--porcelain"], cwd=REPO_ROOT, capture_output=True, text=True
    ).stdout
    assert after == before


def test_the_publish_script_wants_the_whole_export(tmp_path: Path) -> None:
    prompts = _write(tmp_path / "prompts.jsonl", [{"id": "p0"}])
    done = _run(_write(tmp_path / "c.jsonl", [_reply(0)]), prompts)
    assert done.returncode == 1
    assert "holds 1 distinct prompts, the preset's export 7,620" in done.stderr
