"""VLLMBackbone against an injected fake ``vllm`` module; the overhead benchmark's logic
and the tiny local Llama on CPU; a real-GPU test on that tiny model (no download)."""

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
        if not isinstance(sampling_params, list):  # vLLM takes one for all, or one each
            sampling_params = [sampling_params] * len(prompts)
        self.calls.append((list(prompts), list(sampling_params)))
        # Echo the prompt length so order can be checked.
        return [
            types.SimpleNamespace(
                prompt_token_ids=list(range(len(p))),
                outputs=[types.SimpleNamespace(text=f" out{len(p)} ", token_ids=[7, 8])],
            )
            for p in prompts
        ]


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    import importlib.machinery

    module = types.ModuleType("vllm")
    # The backbone registry checks availability with importlib.util.find_spec.
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
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
    assert [c.text for c in out] == [f"out{len(p)}" for p in prompts]  # order kept, stripped
    # vLLM's token counts come back with each completion.
    assert [(c.prompt_tokens, c.completion_tokens) for c in out] == [(len(p), 2) for p in prompts]
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


def test_overhead_benchmark_logic_with_fake_engine(fake_vllm: types.ModuleType, tmp_path) -> None:
    from chronobench.bench.vllm_overhead import fixture_requests, format_report, measure

    reqs = fixture_requests(12, max_new_tokens=8)
    assert len({len(r.context) for r in reqs}) > 3  # memory of varying length
    assert all(r.params.max_new_tokens == 8 and r.task == "qa" for r in reqs)
    bb = VLLMBackbone(model="fake")
    result = measure(bb, reqs, tmp_path / "calls.sqlite")
    assert result["prompts"] == 12 and result["same_outputs"] is True
    for key in ("raw_s", "backbone_s", "cached_cold_s", "cached_warm_s"):
        assert result[key] >= 0
    # warm-up (2 prompts), raw, backbone, cached cold; the warm pass never reaches vLLM
    assert [len(p) for p, _ in bb._llm.calls] == [2, 12, 12, 12]
    assert "harness overhead" in format_report(result)


def test_overhead_benchmark_flags_diverging_outputs(fake_vllm: types.ModuleType, tmp_path) -> None:
    from chronobench.bench.vllm_overhead import fixture_requests, measure

    bb = VLLMBackbone(model="fake")
    real = bb._llm.generate
    bb._llm.generate = lambda p, s, use_tqdm=True: (  # type: ignore[method-assign]
        real(p, s) if isinstance(s, list) else real([x + "!" for x in p], s)
    )
    assert measure(bb, fixture_requests(4), tmp_path / "c.sqlite")["same_outputs"] is False


@pytest.mark.slow
def test_tiny_llama_builds_and_generates_on_cpu(tmp_path) -> None:
    """The GPU test's model: built locally, loadable, deterministic, any text encodes."""
    pytest.importorskip("transformers")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from chronobench.backbones._chat import render_chat
    from chronobench.bench.tiny_llama import build_tiny_llama

    folder = build_tiny_llama(tmp_path / "tiny")
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    assert model.config.architectures == ["LlamaForCausalLM"]
    assert model.config.hidden_size // model.config.num_attention_heads == 64
    prompt = render_chat(tok, make_request("Wann? ünïcode 🙂").messages)
    assert prompt.endswith("<|assistant|>\n")
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False).input_ids
    assert tok.decode(ids[0]) == prompt  # byte-level: lossless, no unknown tokens
    with torch.no_grad():
        a = model.generate(ids, max_new_tokens=4, do_sample=False)
        b = model.generate(ids, max_new_tokens=4, do_sample=False)
    assert a.shape[1] == ids.shape[1] + 4 and torch.equal(a, b)


def test_gpu_check_script_is_valid_bash() -> None:
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.sh"
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _gpu_available() -> bool:
    if importlib.util.find_spec("vllm") is None or importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs vllm and a CUDA GPU")
def test_real_tiny_model_generates_in_order(tmp_path) -> None:  # pragma: no cover - GPU only
    """vLLM on a tiny random Llama built locally: nothing is downloaded."""
    from chronobench.bench.tiny_llama import build_tiny_llama

    folder = build_tiny_llama(tmp_path / "tiny")
    bb = VLLMBackbone(
        model=str(folder),
        max_model_len=2048,
        gpu_memory_utilization=0.2,
        use_tqdm=False,
        enable_prefix_caching=False,  # same compute path both times
    )
    reqs = [
        make_request(f"What is {i} plus {i}?", params=GenerationParams(max_new_tokens=8 + i))
        for i in range(4)
    ]
    out = bb.generate(reqs)
    assert len(out) == 4 and all(isinstance(o.text, str) for o in out)
    assert all(o.prompt_tokens and o.completion_tokens <= 8 + i for i, o in enumerate(out))
    assert out == bb.generate(reqs)  # greedy decoding is deterministic
