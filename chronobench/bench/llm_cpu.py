"""``bench llm-cpu``: prefill and decode speed of a packaged model on this CPU, per thread
count (pick ``backbone.params.threads``; on a loaded 2-core machine one thread
beat two).

Prints, per thread count, the seconds and tokens per second of a forward pass over a
``--prompt-tokens`` prompt (prefill) and of greedy decoding ``--new-tokens`` tokens after
a short prompt. With ``--prompts FILE`` (what ``backbone=export`` wrote) it answers the
first ``--limit`` prompts one at a time instead, as a run would, and prints each one's
CPU seconds (this process's, so other work on the machine does not inflate them), wall
seconds and token counts. With ``--batch-sizes 1 8 16`` it answers the same prompts
once per batch size instead (left-padded batches of prompts of about one length, as
``chronobench generate --batch-size`` makes them) and prints each size's CPU seconds per
prompt; ``--against COMPLETIONS`` keeps only prompts that file answers (spread evenly
over them, ``--limit`` of them) and counts the replies identical to its recorded ones,
printing the ones that are not. Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import time

_TEXT = "Caroline went to the LGBTQ support group on 7 May 2023 and felt accepted. "


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``bench llm-cpu``."""
    parser.add_argument("--model", default="smollm2", help="a packaged model (default smollm2)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--prompt-tokens", type=int, default=500)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2, help="best of N (default 2)")
    parser.add_argument("--dtype", default="float32", help="float32, bfloat16, auto")
    parser.add_argument("--prompts", help="an exported prompts file: time real prompts")
    parser.add_argument("--limit", type=int, default=10, help="--prompts: how many")
    parser.add_argument(
        "--ct2", action="store_true", help="--prompts: on CTranslate2 (the llm-ct2 extra)"
    )
    parser.add_argument(
        "--compute-type",
        default="int8",
        help="--ct2: int8 (default), int8_float32, int16, float32 (each its own converted folder)",
    )
    parser.add_argument(
        "--batch-sizes",
        type=int,
        nargs="+",
        help="--prompts: answer them once per batch size (left padding), e.g. 1 8 16",
    )
    parser.add_argument(
        "--against", help="--prompts: a completions file; compare the replies with its own"
    )


def main(args: argparse.Namespace) -> int:
    """Run the benchmark and print one line per thread count."""
    import torch

    from chronobench.backbones.packaged import PackagedTransformersBackbone

    if args.prompts and args.ct2:
        from chronobench.backbones.ct2_backend import CT2Backbone

        ct2 = CT2Backbone(args.model, threads=args.threads[0], compute_type=args.compute_type)
        return _real_prompts(ct2, args)
    bb = PackagedTransformersBackbone(args.model, dtype=args.dtype)
    if args.prompts and args.batch_sizes:
        return _batched(bb, args)
    if args.prompts:
        return _real_prompts(bb, args)
    tok, model = bb._tokenizer, bb._model
    ids = tok(_TEXT * (args.prompt_tokens // 10 + 1), return_tensors="pt").input_ids
    ids = ids[:, : args.prompt_tokens]
    short = ids[:, :16]
    print(f"{args.model}: prefill {ids.shape[1]} tokens, decode {args.new_tokens} tokens")
    for n in args.threads:
        torch.set_num_threads(n)
        prefill, decode = float("inf"), float("inf")
        with torch.no_grad():
            for _ in range(max(1, args.repeats)):
                t = time.perf_counter()
                model(ids)
                prefill = min(prefill, time.perf_counter() - t)
                t = time.perf_counter()
                model.generate(
                    short,
                    attention_mask=torch.ones_like(short),
                    max_new_tokens=args.new_tokens,
                    min_new_tokens=args.new_tokens,
                    do_sample=False,
                    pad_token_id=tok.pad_token_id,
                )
                decode = min(decode, time.perf_counter() - t)
        print(
            f"  threads {n}: prefill {prefill:.2f} s ({ids.shape[1] / prefill:.0f} tokens/s), "
            f"decode {decode:.2f} s ({args.new_tokens / decode:.1f} tokens/s)"
        )
    return 0


def _select(args: argparse.Namespace, spread: bool) -> tuple[list[dict], dict[str, str]]:
    """The prompts to time and, with ``--against``, that file's replies (only prompts it
    answers): ``--limit`` of them, spread over the file (not its first cell only) when
    ``spread`` or ``--against``, else the first ones."""
    from chronobench.backbones.standalone_generate import read_records

    records = read_records(args.prompts)
    recorded: dict[str, str] = {}
    if args.against:
        recorded = {r["id"]: str(r.get("text", "")) for r in read_records(args.against)}
        records = [r for r in records if r["id"] in recorded]
        if not records:
            raise SystemExit(f"--against {args.against}: it answers none of {args.prompts}")
    if (spread or recorded) and len(records) > args.limit:
        step = len(records) / args.limit
        records = [records[int(i * step)] for i in range(args.limit)]
    return records[: args.limit], recorded


def _real_prompts(backbone: object, args: argparse.Namespace) -> int:
    import torch

    from chronobench.backbones.offline import request_of

    torch.set_num_threads(args.threads[0])
    records, recorded = _select(args, spread=False)
    print(
        f"{args.model} ({backbone.cache_config}, {args.threads[0]} thread(s)): "  # type: ignore[attr-defined]
        f"{len(records)} prompts of {args.prompts}"
        + (f", replies compared with {args.against}" if args.against else "")
    )
    cpu_total = wall_total = 0.0
    same = 0
    for rec in records:
        request = request_of(rec, where=args.prompts)
        cpu, wall = time.process_time(), time.perf_counter()
        (out,) = backbone.generate([request])  # type: ignore[attr-defined]
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        cpu_total += cpu
        wall_total += wall
        mark = ""
        if recorded:
            same += recorded[rec["id"]] == out.text
            mark = (
                "  ="
                if recorded[rec["id"]] == out.text
                else f"  recorded {recorded[rec['id']][:40]!r}"
            )
        print(
            f"  {rec['id'][:12]} {rec.get('task', 'qa'):7} {out.prompt_tokens:5d} + "
            f"{out.completion_tokens:3d} tokens  {cpu:6.2f} CPU-s {wall:6.2f} s  "
            f"{out.text[:60]!r}{mark}",
            flush=True,
        )
    n = max(1, len(records))
    line = f"  mean {cpu_total / n:.2f} CPU-s, {wall_total / n:.2f} s wall per prompt"
    if recorded:
        line += f"; {same}/{len(records)} replies as recorded"
    print(line)
    return 0


def _batched(backbone: object, args: argparse.Namespace) -> int:
    """The same prompts once per batch size: CPU seconds per prompt, and the replies
    against each other and against ``--against``'s."""
    import torch

    from chronobench.backbones.offline import request_of

    if any(b < 1 for b in args.batch_sizes):
        raise SystemExit(f"--batch-sizes must be at least 1, got {args.batch_sizes}")
    torch.set_num_threads(args.threads[0])
    records, recorded = _select(args, spread=True)
    requests = [request_of(r, where=args.prompts) for r in records]
    print(
        f"{args.model} ({args.dtype}, {args.threads[0]} thread(s)): {len(records)} prompts of "
        f"{args.prompts}" + (f", replies compared with {args.against}" if args.against else "")
    )
    # Timed per reply limit (answers, summaries): their costs differ ten-fold.
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(requests):
        groups.setdefault(r.params.max_new_tokens, []).append(i)
    first: list[str] | None = None
    for size in args.batch_sizes:
        backbone.batch_size = size  # type: ignore[attr-defined]
        texts = [""] * len(requests)
        cpu = wall = 0.0
        parts = []
        for limit, idx in sorted(groups.items()):
            c, w = time.process_time(), time.perf_counter()
            outs = backbone.generate([requests[i] for i in idx])  # type: ignore[attr-defined]
            c, w = time.process_time() - c, time.perf_counter() - w
            cpu, wall = cpu + c, wall + w
            parts.append(f"{len(idx)} of <= {limit} new tokens {c / len(idx):.2f}")
            for i, o in zip(idx, outs, strict=True):
                texts[i] = o.text
        line = (
            f"  batch {size:3d}: {cpu / len(records):6.2f} CPU-s, {wall / len(records):6.2f} s "
            f"wall per prompt ({cpu:.0f} CPU-s, {wall:.0f} s in all; CPU-s per prompt: "
            f"{', '.join(parts)})"
        )
        if first is not None:
            same = sum(a == b for a, b in zip(first, texts, strict=True))
            line += f"; {same}/{len(texts)} replies as batch {args.batch_sizes[0]}'s"
        if recorded:
            same = sum(recorded[r["id"]] == t for r, t in zip(records, texts, strict=True))
            line += f"; {same}/{len(texts)} as recorded"
        print(line, flush=True)
        for rec, text in zip(records, texts, strict=True):
            if recorded and recorded[rec["id"]] != text:
                print(f"    {rec['id'][:12]} recorded {recorded[rec['id']]!r} now {text!r}")
        first = texts if first is None else first
    return 0
