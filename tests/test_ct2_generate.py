"""`chronobench generate --engine ct2` and the board's runtime line.

Fast and offline: the CTranslate2 backbone and module are stand-ins (the extra is
optional), so what is tested is the command's wiring: every reply records the runtime,
its version and compute type, a batch size other than 1 is refused before a model
loads, and the small-LLM section names a runtime other than bfloat16 instead of calling
its replies bfloat16's.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Sequence
from pathlib import Path

import pytest

from chronobench.backbones.offline import ExportBackbone, prompt_id
from chronobench.protocols import (
    ChatMessage,
    Completion,
    GenerationParams,
    GenerationRequest,
)
from chronobench.tracks.small_llm.board import runtime_phrase


def _request(text: str) -> GenerationRequest:
    return GenerationRequest(
        messages=(ChatMessage("system", "Answer in a few words."), ChatMessage("user", text)),
        params=GenerationParams(max_new_tokens=8),
        question=text,
    )


class _FakeCT2:
    made: list[dict[str, object]] = []

    def __init__(self, model: str, threads: int, compute_type: str, cache_dir: object) -> None:
        self.model, self.compute_type = "qwen2.5-1.5b", compute_type
        _FakeCT2.made.append({"model": model, "threads": threads, "compute_type": compute_type})

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        return [Completion(f"reply to {r.messages[-1].content}", 10, 2) for r in requests]


@pytest.fixture
def fake_ct2(monkeypatch: pytest.MonkeyPatch) -> type[_FakeCT2]:
    import chronobench.backbones.ct2_backend as ct2_backend

    monkeypatch.setitem(sys.modules, "ctranslate2", types.SimpleNamespace(__version__="9.9.9"))
    monkeypatch.setattr(ct2_backend, "CT2Backbone", _FakeCT2)
    _FakeCT2.made = []
    return _FakeCT2


def test_generate_on_ct2_records_its_runtime(tmp_path: Path, fake_ct2: type[_FakeCT2]) -> None:
    from chronobench.commands import main

    prompts, out = tmp_path / "p.jsonl", tmp_path / "c.jsonl"
    requests = [_request("a"), _request("b c")]
    ExportBackbone(str(prompts)).generate(requests)
    args = ["generate", str(prompts), str(out), "--engine", "ct2", "--model", "qwen-1b5"]
    assert main([*args, "--compute-type", "int8_float32", "--threads", "2"]) == 0
    assert fake_ct2.made == [{"model": "qwen-1b5", "threads": 2, "compute_type": "int8_float32"}]
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert {r["id"] for r in records} == {prompt_id(r) for r in requests}
    for r in records:
        assert r["engine"] == "ct2" and r["model"] == "qwen2.5-1.5b"
        assert r["runtime"] == {
            "runtime": "ctranslate2",
            "ctranslate2": "9.9.9",
            "compute_type": "int8_float32",
            "batch_size": 1,
            "padding": "none",
            "threads": 2,
        }


def test_generate_on_ct2_refuses_a_batch_before_loading(
    tmp_path: Path, fake_ct2: type[_FakeCT2]
) -> None:
    from chronobench.commands import main

    prompts = tmp_path / "p.jsonl"
    ExportBackbone(str(prompts)).generate([_request("a")])
    args = ["generate", str(prompts), str(tmp_path / "c.jsonl"), "--engine", "ct2"]
    with pytest.raises(SystemExit):
        main([*args, "--model", "qwen-1b5", "--batch-size", "4"])
    assert fake_ct2.made == []


def test_the_runtime_line_names_what_is_not_bfloat16() -> None:
    ct2 = {"runtime": "ctranslate2", "ctranslate2": "4.8.5", "compute_type": "int8"}
    # The published replies record no runtime, and were bfloat16's: the line as before.
    assert runtime_phrase([]) == "run in bfloat16"
    assert runtime_phrase([{}, {"dtype": "bfloat16", "batch_size": 16}]) == "run in bfloat16"
    assert runtime_phrase([ct2, ct2]) == "run on CTranslate2 4.8.5 (int8)"
    assert runtime_phrase([{"dtype": "float32"}]) == "run in float32"
    mixed = runtime_phrase([{}, ct2, ct2])
    assert mixed == "replies run 2 on CTranslate2 4.8.5 (int8), 1 in bfloat16"
