"""VLLMBackbone against an injected fake ``vllm`` module, plus a real-GPU smoke test."""

from __future__ import annotations

import importlib.util
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import pytest
from _backbones_fixtures import make_request

from chronobench.backbones import create_backbone
from chronobench.backbones.vllm_backend import VLLMBackbone
from chronobench.protocols import GenerationParams


@dataclass
class FakeSamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    stop: list[str] | None = None


class FakeTokenizer:
    def __init__(self, reject_system: bool = False) -> None:
        self.reject_system = reject_system

    def apply_chat_template(self, messages, tokenize, add_generation_prompt, **kw):  # type: ignore[no-untyped-def]
        assert tokenize is False and add_generation_prompt is True
        if self.reject_system and any(m["role"] == "system" for m in messages):
            raise ValueError("Conversation roles must alternate user/assistant")
        body = "".join(f"<{m['role']}>{m['content']}</{m['role']}>" for m in messages)
        return body + "<assistant>"


@dataclass
class FakeLLM:
    kwargs: dict[str, Any]
    calls: list[tuple[list[str], list[FakeSamplingParams]]] = field(default_factory=list)
    tokenizer: FakeTokenizer = field(default_factory=FakeTokenizer)

    def get_tokenizer(self) -> FakeTokenizer:
        return self.tokenizer

    def generate(self, prompts, sampling_params, use_tqdm=True):  # type: ignore[no-untyped-def]
        self.calls.append((list(prompts), list(sampling_params)))
        # Echo the prompt length so order can be checked.
        return [
            types.SimpleNamespace(outputs=[types.SimpleNamespace(text=f" out{len(p)} ")])
            for p in prompts
        ]


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("vllm")
    module.SamplingParams = FakeSamplingParams  # type: ignore[attr-defined]
    module.LLM = lambda **kw: FakeLLM(kwargs=kw)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def test_one_batched_call_with_mapped_params(fake_vllm: types.ModuleType) -> None:
    bb = create_backbone(
        "vllm", model="m/x", tensor_parallel_size=2, max_model_len=4096, seed=7, enforce_eager=True
    )
    assert isinstance(bb, VLLMBackbone)
    llm = bb._llm
    assert llm.kwargs == {
        "model": "m/x",
        "tensor_parallel_size": 2,
        "dtype": "auto",
        "seed": 7,
        "gpu_memory_utilization": 0.9,
        "enforce_eager": True,
        "max_model_len": 4096,
    }
    reqs = [
        make_request("short"),
        make_request(
            "a much longer question here",
            params=GenerationParams(
                max_new_tokens=32, temperature=0.7, top_p=0.9, seed=3, stop=("\n",)
            ),
        ),
        make_request("mid question"),
    ]
    out = bb.generate(reqs)
    assert len(llm.calls) == 1
    prompts, params = llm.calls[0]
    assert out == [f"out{len(p)}" for p in prompts]  # order kept, whitespace stripped
    assert prompts[0].startswith("<system>Answer from the memory.</system><user>")
    assert prompts[0].endswith("Question: short</user><assistant>")
    assert params[0] == FakeSamplingParams(0.0, 1.0, 128, 0, None)
    assert params[1] == FakeSamplingParams(0.7, 0.9, 32, 3, ["\n"])
    assert bb.generate([]) == [] and len(llm.calls) == 1


def test_system_role_merged_when_template_rejects_it(fake_vllm: types.ModuleType) -> None:
    bb = VLLMBackbone(model="mistral")
    bb._tokenizer = FakeTokenizer(reject_system=True)
    bb.generate([make_request("q")])
    prompt = bb._llm.calls[0][0][0]
    assert prompt.startswith("<user>Answer from the memory.\n\n")


def test_missing_vllm_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail
    with pytest.raises(ImportError, match=r"chronobench\[vllm\]"):
        VLLMBackbone(model="x")


def _gpu_available() -> bool:
    if importlib.util.find_spec("vllm") is None or importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs vllm and a CUDA GPU")
def test_real_tiny_model_generates_in_order() -> None:  # pragma: no cover - GPU only
    import os

    model = os.environ.get("CHRONOBENCH_VLLM_TEST_MODEL", "Qwen/Qwen2.5-0.5B-Instruct")
    bb = VLLMBackbone(model=model, max_model_len=1024, gpu_memory_utilization=0.3)
    reqs = [make_request(f"What is {i} plus {i}? Reply with a number.") for i in range(4)]
    out = bb.generate(reqs)
    assert len(out) == 4 and all(isinstance(o, str) and o for o in out)
    assert out == bb.generate(reqs)  # greedy decoding is deterministic
