"""``python -m chronobench bench vllm-overhead``: what the harness adds on top of vLLM.

The same prompts (QA prompts the runner builds over the tiny LoCoMo fixture's turns)
are generated four ways on one ``vllm.LLM`` engine:

- ``raw``: one batched ``llm.generate(prompts, SamplingParams)``, prompts pre-rendered;
- ``backbone``: :class:`~chronobench.backbones.vllm_backend.VLLMBackbone` (chat template
  rendering, per-request sampling parameters, one batched call);
- ``cached cold``: the backbone behind the persistent call cache, empty (keys, lookup,
  generation, writes): what a first run pays;
- ``cached warm``: the same again, every answer from the cache.

Overhead is ``cached cold`` against ``raw``. Outputs must be identical across the
four (greedy decoding), which is checked and reported. With no ``--model`` the tiny
random Llama of :mod:`chronobench.bench.tiny_llama` is built locally (no download).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from chronobench.protocols import GenerationParams, GenerationRequest

_FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "locomo_tiny.json"


def fixture_requests(
    n: int, *, max_new_tokens: int = 32, fixture: str | Path | None = None
) -> list[GenerationRequest]:
    """``n`` QA requests shaped like the runner's: memory windows of the fixture's turns of
    varying length, each with one of its questions."""
    from chronobench.systems.prompts import qa_request

    path = Path(fixture) if fixture is not None else _FIXTURE
    if not path.is_file():
        raise FileNotFoundError(f"--fixture: {path} not found; pass a LoCoMo-format JSON file")
    convs = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    questions: list[str] = []
    for conv in convs:
        for key, value in conv["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                turns += [f"{t['speaker']}: {t['text']}" for t in value]
        questions += [qa["question"] for qa in conv.get("qa", [])]
    if not turns or not questions:
        raise ValueError(f"{path}: no turns or no questions to build prompts from")
    params = GenerationParams(max_new_tokens=max_new_tokens, temperature=0.0, seed=0)
    out = []
    for i in range(n):
        width = 1 + (i * 7) % len(turns)  # memory from 1 turn to all of them
        start = (i * 3) % len(turns)
        items = (turns[start:] + turns[:start])[:width]
        out.append(qa_request(questions[i % len(questions)], items, params))
    return out


def measure(backbone: Any, requests: list[GenerationRequest], cache_path: Path) -> dict[str, Any]:
    """Time the four paths on ``backbone``'s engine; see the module docstring."""
    from chronobench.backbones import CachedBackbone
    from chronobench.backbones._chat import render_chat

    llm = backbone._llm
    backbone.use_tqdm = False
    prompts = [
        render_chat(backbone._tokenizer, r.messages, backbone.chat_template) for r in requests
    ]
    one = backbone._sampling(requests[0].params)  # the runner's requests share their params
    llm.generate(prompts[:2], one, use_tqdm=False)  # warm-up, charged to neither side

    t = time.perf_counter()
    raw = [o.outputs[0].text.strip() for o in llm.generate(prompts, one, use_tqdm=False)]
    raw_s = time.perf_counter() - t
    t = time.perf_counter()
    direct = backbone.generate(requests)
    backbone_s = time.perf_counter() - t
    with CachedBackbone(backbone, cache_path) as cached:
        t = time.perf_counter()
        cold = cached.generate(requests)
        cold_s = time.perf_counter() - t
        t = time.perf_counter()
        warm = cached.generate(requests)
        warm_s = time.perf_counter() - t
    return {
        "prompts": len(requests),
        "prompt_chars": sum(len(p) for p in prompts),
        "raw_s": round(raw_s, 4),
        "backbone_s": round(backbone_s, 4),
        "cached_cold_s": round(cold_s, 4),
        "cached_warm_s": round(warm_s, 4),
        "overhead_s": round(cold_s - raw_s, 4),
        "overhead_pct": round(100.0 * (cold_s - raw_s) / raw_s, 1) if raw_s > 0 else None,
        "same_outputs": raw == _texts(direct) == _texts(cold) == _texts(warm),
    }


def _texts(completions: list[Any]) -> list[str]:
    return [c.text for c in completions]


def format_report(result: dict[str, Any]) -> str:
    """A small table of :func:`measure`'s result."""
    rows = [
        ("raw vllm.generate", result["raw_s"]),
        ("VLLMBackbone", result["backbone_s"]),
        ("cached, cold", result["cached_cold_s"]),
        ("cached, warm", result["cached_warm_s"]),
    ]
    lines = [f"{result['prompts']} prompts ({result['prompt_chars']} chars)"]
    lines += [f"  {name:<20} {secs:9.3f} s" for name, secs in rows]
    lines.append(
        f"  harness overhead     {result['overhead_s']:9.3f} s ({result['overhead_pct']}% of raw)"
    )
    lines.append(f"  identical outputs    {result['same_outputs']}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``bench vllm-overhead``."""
    parser.add_argument("--model", default=None, help="model dir or name (default: tiny Llama)")
    parser.add_argument("--n", type=int, default=512, help="prompts (default 512)")
    parser.add_argument("--max-new-tokens", type=int, default=32, help="per prompt (default 32)")
    parser.add_argument("--json", default=None, help="also write the result to this file")
    parser.add_argument(
        "--gpu-memory-utilization", type=float, default=0.3, help="vLLM share of GPU memory"
    )


def main(args: argparse.Namespace) -> int:
    """Run the benchmark; exit code 1 when the four paths disagree."""
    from chronobench.backbones.vllm_backend import VLLMBackbone

    if args.n < 2:
        raise SystemExit("--n: at least 2 prompts")
    with tempfile.TemporaryDirectory(prefix="chronobench-vllm-") as tmp:
        model = args.model
        if model is None:
            from chronobench.bench.tiny_llama import build_tiny_llama

            model = str(build_tiny_llama(Path(tmp) / "tiny-llama"))
        backbone = VLLMBackbone(
            model=model,
            max_model_len=8192,
            gpu_memory_utilization=args.gpu_memory_utilization,
            use_tqdm=False,
            # Off so the second pass over the same prompts does not reuse the first's KV
            # cache: a fair comparison, and the same compute path for every pass.
            enable_prefix_caching=False,
        )
        requests = fixture_requests(args.n, max_new_tokens=args.max_new_tokens)
        result = measure(backbone, requests, Path(tmp) / "calls.sqlite")
    result["model"] = args.model or "tiny random Llama (local)"
    print(format_report(result))
    if args.json:
        from chronobench.data.io import write_json

        write_json(args.json, result)
    return 0 if result["same_outputs"] else 1
