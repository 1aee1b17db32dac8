"""``chronobench generate --status``: progress from the files alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronobench.commands import main


def _lines(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _prompt(i: int, budget: int) -> dict[str, object]:
    return {"id": f"p{i}", "messages": [], "params": {"max_new_tokens": budget}}


def test_status_counts_every_file_and_estimates_what_is_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = _lines(
        tmp_path / "prompts.jsonl", [_prompt(i, 32) for i in range(6)] + [_prompt(6, 200)]
    )
    out = _lines(tmp_path / "c.jsonl", [{"id": "p0", "text": "a"}, {"id": "p1", "text": "b"}])
    tail = _lines(tmp_path / "t.jsonl", [{"id": "p5", "text": "c"}, {"id": "zz", "text": "d"}])
    log = tmp_path / "generate.log"
    log.write_text(
        "Loading weights: 100%\n"
        "16/90 prompts answered -> c.jsonl (16 in all; 3.00 CPU-s, 4.00 s wall per prompt; 1)\n"
        "32/90 prompts answered -> c.jsonl (32 in all; 2.00 CPU-s, 3.00 s wall per prompt; 2)\n"
    )
    args = ["generate", str(prompts), str(out), "--status", "--also", str(tail)]
    assert main([*args, "--log", str(log)]) == 1  # not done yet
    text = capsys.readouterr().out
    assert "max_new_tokens 32: 3 of 6 answered, 3 left" in text
    assert "max_new_tokens 200: 0 of 1 answered, 1 left" in text
    assert "all: 3 of 7 answered, 4 left" in text
    assert "1 replies answer prompts" in text  # zz
    # 3 answers at the newest rate (2.00) and one summary counted as 10 answers.
    assert "CPU-s left: ~26 (0.0 h of one core) at 2.00 CPU-s an answer" in text
    assert main(args) == 1
    assert "give --log" in capsys.readouterr().out


def test_status_is_zero_when_everything_is_answered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = _lines(tmp_path / "p.jsonl", [_prompt(0, 32)])
    out = _lines(tmp_path / "c.jsonl", [{"id": "p0", "text": "a"}])
    assert main(["generate", "--status", str(prompts), str(out), "--cpu-s", "1"]) == 0
    assert "CPU-s left: ~0" in capsys.readouterr().out


def test_status_names_a_file_that_is_not_an_export(tmp_path: Path) -> None:
    bad = _lines(tmp_path / "p.jsonl", [{"id": "p0"}])
    with pytest.raises(SystemExit, match=r"p.jsonl:1: not an exported prompt"):
        main(["generate", "--status", str(bad), str(tmp_path / "none.jsonl")])


def test_bfloat16_on_a_cpu_without_it_is_warned_about_only_for_the_cpu_engine():
    from chronobench.commands.generate import dtype_warning

    assert "emulates bfloat16" in dtype_warning("packaged", "bfloat16", has_bf16=False)
    assert dtype_warning("packaged", "bfloat16", has_bf16=True) is None
    assert dtype_warning("packaged", "float32", has_bf16=False) is None
    assert dtype_warning("packaged", "auto", has_bf16=False) is None  # auto picks float32
    assert dtype_warning("transformers", "bfloat16", has_bf16=False) is None  # may be a GPU
