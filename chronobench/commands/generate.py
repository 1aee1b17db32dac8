"""``chronobench generate PROMPTS OUT --engine ENGINE --model M``: answer exported prompts.

``PROMPTS`` is what ``run ... backbone=export backbone.params.prompts=PROMPTS`` wrote;
``OUT`` gets one completion a line, which ``backbone=replay
backbone.params.completions=OUT backbone.model=M`` reads back. Engines are the harness's
own backbones: ``packaged`` (a model from ``install-model``: ``--model qwen-1b5``, on
CPU), ``ct2`` (the same model on CTranslate2, ``--compute-type int8``: the llm-ct2
extra), ``transformers`` (a model folder or hub id), ``vllm`` (offline batches on a GPU),
``openai`` (any OpenAI-compatible server, ``--base-url``). Completions already in
``OUT`` are kept (a killed run resumes); ``--reuse FILE`` adds another file's replies to
these prompts first. ``--batch-size N`` (packaged, transformers) answers N prompts of
about one length per forward pass, left-padded, and saves after each batch; every reply
records its ``runtime`` (dtype, batch size, padding, threads). On a machine without
chronobench, run ``chronobench/backbones/standalone_generate.py`` instead: same files,
only transformers or vLLM needed. ``generate --status PROMPTS OUT [--also FILE] [--log
LOG]`` says how far a run is (done / total, the CPU seconds left), from the files alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

ENGINES = ("packaged", "ct2", "transformers", "vllm", "openai")


def dtype_warning(engine: str, dtype: str | None, has_bf16: bool) -> str | None:
    """What to tell someone who asks the CPU-only engine for bfloat16 on a CPU without it."""
    if engine != "packaged" or dtype != "bfloat16" or has_bf16:
        return None
    # Measured on an AVX2-only EPYC: Qwen 1.5B took 128 CPU-s a prompt in emulated
    # bfloat16, 20 in float32, against 2.2 in bfloat16 on an AMX CPU (docs/llm_anywhere.md).
    return (
        "generate: warning: this CPU has neither AMX nor AVX512-BF16, so torch emulates "
        "bfloat16 (about 6x slower than float32 here, 58x slower than on an AMX CPU); "
        "replies made here are bfloat16's, but consider a CPU with AMX or a GPU"
    )


def _backbone(args: argparse.Namespace) -> Any:
    if args.engine == "packaged":
        from chronobench.backbones.packaged import PackagedTransformersBackbone, cpu_has_bf16

        warning = dtype_warning(args.engine, args.dtype, cpu_has_bf16())
        if warning:
            print(warning, file=sys.stderr)
        return PackagedTransformersBackbone(
            args.model,
            threads=args.threads,
            batch_size=args.batch_size,
            dtype=args.dtype,
            cache_dir=args.cache_dir,
        )
    if args.engine == "ct2":
        from chronobench.backbones.ct2_backend import CT2Backbone

        return CT2Backbone(
            args.model,
            threads=args.threads,
            compute_type=args.compute_type,
            cache_dir=args.cache_dir,
        )
    if args.engine == "transformers":
        from chronobench.backbones.transformers_backend import TransformersBackbone

        return TransformersBackbone(args.model, dtype=args.dtype, batch_size=args.batch_size)
    if args.engine == "vllm":
        from chronobench.backbones.vllm_backend import VLLMBackbone

        return VLLMBackbone(args.model, dtype=args.dtype)
    from chronobench.backbones.openai_backend import OpenAIBackbone

    return OpenAIBackbone(args.model, base_url=args.base_url)


def _reuse(sources: list[str], wanted: set[str], out: str) -> None:
    """Add to ``out`` the replies of ``sources`` to prompts in ``wanted`` that ``out``
    lacks, each marked with the file it came from (its own runtime, if any, kept)."""
    from pathlib import Path

    from chronobench.backbones.standalone_generate import read_records, write_records

    done = read_records(out) if Path(out).is_file() else []
    have = {r["id"] for r in done}
    added = 0
    for source in sources:
        if not Path(source).is_file():
            raise SystemExit(f"--reuse {source}: no such completions file")
        for rec in read_records(source):
            if rec["id"] in wanted and rec["id"] not in have:
                have.add(rec["id"])
                done.append({**rec, "reused_from": source})
                added += 1
    write_records(out, done)
    print(f"{added} replies reused from {', '.join(sources)} -> {out}")


def _runtime(args: argparse.Namespace, backbone: Any) -> dict[str, Any]:
    """How the replies are made, recorded with each one: a padded batch can change a
    greedy reply by a token, so the batch size and padding say which path wrote it. A
    CTranslate2 reply names its runtime, version and compute type: its int8 weights give
    other replies than transformers' (docs/llm_anywhere.md), so a file is one runtime's."""
    if args.engine == "ct2":
        import ctranslate2

        return {
            "runtime": "ctranslate2",
            "ctranslate2": ctranslate2.__version__,
            "compute_type": str(getattr(backbone, "compute_type", args.compute_type)),
            "batch_size": 1,
            "padding": "none",
            "threads": args.threads,
        }
    if args.engine not in ("packaged", "transformers"):
        return {"dtype": args.dtype}
    import torch
    import transformers

    batch = int(getattr(backbone, "batch_size", args.batch_size))
    runtime: dict[str, Any] = {
        "dtype": str(getattr(backbone, "dtype", args.dtype)),
        "batch_size": batch,
        "padding": "left" if batch > 1 else "none",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    if args.engine == "packaged":
        runtime["threads"] = args.threads
    return runtime


def main(argv: Sequence[str]) -> int:
    if "--status" in argv:
        # Progress from the files alone: no model, no backbone import.
        from chronobench.commands.generate_status import main as status

        return status(argv)
    from chronobench.backbones.offline import request_of
    from chronobench.backbones.standalone_generate import read_records, run

    p = argparse.ArgumentParser(prog="chronobench generate", description=__doc__)
    p.add_argument("prompts", help="the prompts file backbone=export wrote")
    p.add_argument("out", help="the completions file (resumed when it exists)")
    p.add_argument(
        "--status",
        action="store_true",
        help="only say how far OUT is (with --also FILE, --log LOG): see generate --status -h",
    )
    p.add_argument("--engine", choices=ENGINES, default="packaged")
    p.add_argument("--model", required=True, help="qwen-1b5 / smollm2 (packaged), a folder, an id")
    p.add_argument("--dtype", default="auto", help="float32, bfloat16, auto")
    p.add_argument("--threads", type=int, default=1, help="packaged, ct2: intra-op threads")
    p.add_argument(
        "--compute-type", default="int8", help="ct2: int8 (default), int8_float32, float32"
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=1,
        help="packaged, transformers: prompts per forward pass, left-padded (1: no padding)",
    )
    p.add_argument("--base-url", default="http://127.0.0.1:8000/v1", help="openai: the server")
    p.add_argument("--cache-dir", default=None, help="packaged: where install-model put it")
    p.add_argument(
        "--chunk",
        type=int,
        default=None,
        help="prompts between two saves (default: the batch size, or 16 at batch size 1)",
    )
    p.add_argument(
        "--length-window",
        type=int,
        default=512,
        help="batched: sort by length within each N prompts of the file (0: the whole file)",
    )
    p.add_argument(
        "--reuse",
        action="append",
        default=[],
        metavar="COMPLETIONS",
        help="copy this file's replies to prompts of PROMPTS into OUT first (repeatable)",
    )
    args = p.parse_args(list(argv))
    if args.batch_size < 1:
        p.error(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.engine == "ct2" and args.batch_size != 1:
        p.error("--engine ct2 answers one prompt at a time: leave --batch-size at 1")
    if args.chunk is None:
        args.chunk = args.batch_size if args.batch_size > 1 else 16
    # Every record is checked (and its id re-hashed) before a model is loaded.
    prompts = read_records(args.prompts)
    for rec in prompts:
        request_of(rec, where=f"{args.prompts}, prompt {rec['id']}")
    if args.reuse:
        _reuse(args.reuse, {r["id"] for r in prompts}, args.out)
    backbone = _backbone(args)

    def answer(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        requests = [request_of(r, where=args.prompts) for r in records]
        return [
            {
                "id": r["id"],
                "text": c.text,
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
            }
            for r, c in zip(records, backbone.generate(requests), strict=True)
        ]

    batched = args.engine in ("packaged", "transformers") and args.batch_size > 1
    n = run(
        args.prompts,
        args.out,
        answer,
        model=backbone.model,
        engine=args.engine,
        chunk=args.chunk,
        by_length=batched,
        window=args.length_window,
        runtime=_runtime(args, backbone),
    )
    print(f"{n} prompts answered by {args.engine} {backbone.model}; completions in {args.out}")
    return 0
