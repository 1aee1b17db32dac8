"""Answer an exported prompts file with transformers or vLLM, without chronobench.

This file imports nothing of chronobench: copy it to a GPU machine that has torch and
transformers (or vLLM), the prompts file and a model folder, and run

    python standalone_generate.py PROMPTS.jsonl COMPLETIONS.jsonl --model /models/Qwen2.5-7B-Instruct \
        --engine vllm          # or: --engine transformers --device cuda --dtype bfloat16

``PROMPTS.jsonl`` is what ``chronobench run ... backbone=export`` wrote (one prompt a
line: ``id``, ``messages``, ``params``); each line of the output is ``{"id", "text",
"prompt_tokens", "completion_tokens", "model", "engine"}``, which ``backbone=replay``
reads back. Prompts are rendered with the model's chat template (a template without a
system role gets the system text folded into the first user turn), decoded greedily
unless a prompt's temperature is above 0, cut at its stop strings and stripped: what the
harness's own transformers and vLLM backbones do. Completions already in the output are
kept, so an interrupted run resumes; the output is rewritten whole (temporary file and
rename) after every batch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ENGINES = ("transformers", "vllm")


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The JSON objects of ``path``, one a line (blank lines skipped)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise SystemExit(f"{path}:{n}: not JSON ({err.msg})") from None
            if not isinstance(rec, dict) or "id" not in rec:
                raise SystemExit(f"{path}:{n}: expected an object with an `id`")
            out.append(rec)
    return out


def write_records(path: str | os.PathLike[str], records: Sequence[dict[str, Any]]) -> None:
    """Write ``records`` as JSON lines to ``path`` atomically (temporary file, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for rec in records:
                fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _fold_system(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if system and rest and rest[0]["role"] == "user":
        rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
    elif system:
        rest.insert(0, {"role": "user", "content": system})
    return rest


def render(tokenizer: Any, messages: list[dict[str, str]]) -> str:
    """The chat-templated prompt text, generation prompt added."""
    kwargs = {"tokenize": False, "add_generation_prompt": True}
    try:
        return tokenizer.apply_chat_template(messages, **kwargs)
    except Exception:  # a template without a system role; jinja raises its own error type
        if not any(m["role"] == "system" for m in messages):
            raise
        return tokenizer.apply_chat_template(_fold_system(messages), **kwargs)


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    """``text`` up to its first stop string."""
    cut = min((text.find(s) for s in stops if s and s in text), default=-1)
    return text[:cut] if cut >= 0 else text


def transformers_engine(
    model: str, device: str = "auto", dtype: str = "auto", batch_size: int = 1
) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """A function answering a list of prompt records with ``transformers``. Records are
    batched only with records of the same params; batch_size 1 (the default) gives the
    harness's CPU answers exactly (no padding)."""
    import torch
    import transformers

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    tok = transformers.AutoTokenizer.from_pretrained(model, padding_side="left")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
    lm = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=torch_dtype).to(device)
    lm.eval()
    eos = tok.eos_token_id

    def answer(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for rec in records:
            groups.setdefault(json.dumps(rec["params"], sort_keys=True), []).append(rec)
        out = []
        chunks = [
            group[start : start + batch_size]
            for group in groups.values()
            for start in range(0, len(group), batch_size)
        ]
        for chunk in chunks:
            params = chunk[0]["params"]
            prompts = [render(tok, r["messages"]) for r in chunk]
            enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
            enc = {k: v.to(device) for k, v in enc.items()}
            kwargs: dict[str, Any] = {
                "max_new_tokens": int(params["max_new_tokens"]),
                "do_sample": float(params["temperature"]) > 0,
                "pad_token_id": tok.pad_token_id,
            }
            if kwargs["do_sample"]:
                torch.manual_seed(int(params["seed"]))
                kwargs.update(temperature=params["temperature"], top_p=params["top_p"])
            with torch.no_grad():
                gen = lm.generate(**enc, **kwargs)
            new = gen[:, enc["input_ids"].shape[1] :]
            texts = tok.batch_decode(new, skip_special_tokens=True)
            for rec, text, n_in, row in zip(
                chunk, texts, enc["attention_mask"].sum(dim=1).tolist(), new, strict=True
            ):
                ids = row.tolist()
                n_out = ids.index(eos) + 1 if eos is not None and eos in ids else len(ids)
                out.append(
                    {
                        "id": rec["id"],
                        "text": cut_at_stop(text, params.get("stop") or ()).strip(),
                        "prompt_tokens": int(n_in),
                        "completion_tokens": int(n_out),
                    }
                )
        return out

    return answer


def vllm_engine(
    model: str, dtype: str = "auto", tensor_parallel_size: int = 1, max_model_len: int | None = None
) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """A function answering a list of prompt records with vLLM's offline batch API."""
    import vllm

    kwargs: dict[str, Any] = {"model": model, "dtype": dtype, "seed": 0}
    kwargs["tensor_parallel_size"] = tensor_parallel_size
    if max_model_len is not None:
        kwargs["max_model_len"] = max_model_len
    llm = vllm.LLM(**kwargs)
    tok = llm.get_tokenizer()

    def answer(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        prompts = [render(tok, r["messages"]) for r in records]
        sampling = [
            vllm.SamplingParams(
                temperature=float(r["params"]["temperature"]),
                top_p=float(r["params"]["top_p"]),
                max_tokens=int(r["params"]["max_new_tokens"]),
                seed=int(r["params"]["seed"]),
                stop=list(r["params"].get("stop") or ()) or None,
            )
            for r in records
        ]
        outs = llm.generate(prompts, sampling)
        return [
            {
                "id": r["id"],
                "text": o.outputs[0].text.strip(),
                "prompt_tokens": len(o.prompt_token_ids or ()),
                "completion_tokens": len(o.outputs[0].token_ids or ()),
            }
            for r, o in zip(records, outs, strict=True)
        ]

    return answer


def params_key(params: dict[str, Any]) -> tuple[tuple[str, int, Any], ...]:
    """A sort key for a prompt's params: by name, numbers by value (32 before 200),
    strings as text, anything else as its JSON text; values of different kinds never meet
    in one comparison, so any params sort."""
    out = []
    for name in sorted(params):
        value = params[name]
        if isinstance(value, bool) or value is None:
            out.append((name, 2, json.dumps(value)))
        elif isinstance(value, (int, float)):
            out.append((name, 0, float(value)))
        elif isinstance(value, str):
            out.append((name, 1, value))
        else:
            out.append((name, 2, json.dumps(value, sort_keys=True)))
    return tuple(out)


def message_chars(messages: Sequence[dict[str, str]]) -> int:
    """A prompt's length in characters: a tokenizer-free stand-in for its token count."""
    return sum(len(m.get("content") or "") for m in messages)


def run(
    prompts: str | os.PathLike[str],
    out: str | os.PathLike[str],
    answer: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    *,
    model: str,
    engine: str,
    chunk: int = 64,
    log: Callable[[str], None] = print,
    by_length: bool = False,
    window: int = 0,
    runtime: dict[str, Any] | None = None,
) -> int:
    """Answer every prompt of ``prompts`` not already in ``out``; returns how many.

    ``by_length``: within same-params prompts, shortest first, so a padded batch holds
    prompts of about one length (less padding to compute); with ``window`` > 0 only
    within each run of ``window`` prompts of the file, so the file's order (an export's
    cells, one after another) still says what is answered first. ``runtime``: how the
    replies are made (dtype, batch size, padding ...), recorded with each completion.
    """
    if chunk < 1:
        raise SystemExit(f"--chunk must be at least 1 (prompts between two saves), got {chunk}")
    if window < 0:
        raise SystemExit(f"the length-sort window must be 0 (the whole file) or more: {window}")
    todo = read_records(prompts)
    done = read_records(out) if Path(out).is_file() else []
    have = {r["id"] for r in done}
    # A prompt's place in the file, not in what is left: windows stay put on a resume.
    place = {r["id"]: n for n, r in enumerate(todo)}
    todo = [r for r in todo if r["id"] not in have]
    # Same-params prompts together (a transformers batch shares one set of params), and
    # in numeric order: as JSON text 200 new tokens sorted before 32, so a long summary
    # batch ran before every short answer.
    if by_length:
        todo.sort(
            key=lambda r: (
                params_key(r["params"]),
                place[r["id"]] // window if window else 0,
                message_chars(r["messages"]),
            )
        )
    else:
        todo.sort(key=lambda r: params_key(r["params"]))
    extra: dict[str, Any] = {"model": model, "engine": engine}
    if runtime:
        extra["runtime"] = dict(runtime)
    # This process's CPU seconds (other work on a shared machine does not inflate them)
    # and the wall clock, per prompt so far: what a progress check needs.
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for start in range(0, len(todo), chunk):
        for rec in answer(todo[start : start + chunk]):
            done.append({**rec, **extra})
        write_records(out, done)
        n = min(start + chunk, len(todo))
        cpu, wall = (time.process_time() - cpu0) / n, (time.perf_counter() - wall0) / n
        log(
            f"{n}/{len(todo)} prompts answered -> {out} ({len(done)} in all; "
            f"{cpu:.2f} CPU-s, {wall:.2f} s wall per prompt; {time.strftime('%H:%M:%S')})"
        )
    if not todo:
        write_records(out, done)
    return len(todo)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("prompts", help="the prompts file `backbone=export` wrote")
    p.add_argument("out", help="the completions file to write (resumed when it exists)")
    p.add_argument("--model", required=True, help="a model folder (or a hub id where online)")
    p.add_argument("--engine", choices=ENGINES, default="transformers")
    p.add_argument("--name", help="the model's name in the output (default: --model)")
    p.add_argument("--device", default="auto", help="transformers: cpu, cuda, auto")
    p.add_argument("--dtype", default="auto", help="float32, bfloat16, float16, auto")
    p.add_argument("--batch-size", type=int, default=1, help="transformers: prompts a batch")
    p.add_argument("--tensor-parallel-size", type=int, default=1, help="vllm")
    p.add_argument("--max-model-len", type=int, default=None, help="vllm")
    p.add_argument("--chunk", type=int, default=64, help="prompts between two saves")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.engine == "vllm":
        answer = vllm_engine(args.model, args.dtype, args.tensor_parallel_size, args.max_model_len)
        runtime: dict[str, Any] = {"dtype": args.dtype, "batching": "vllm"}
    else:
        answer = transformers_engine(args.model, args.device, args.dtype, args.batch_size)
        runtime = {
            "device": args.device,
            "dtype": args.dtype,
            "batch_size": args.batch_size,
            "padding": "left" if args.batch_size > 1 else "none",
        }
    n = run(
        args.prompts,
        args.out,
        answer,
        model=args.name or args.model,
        engine=args.engine,
        chunk=args.chunk,
        by_length=args.engine == "transformers" and args.batch_size > 1,
        runtime=runtime,
    )
    print(f"{n} prompts answered; completions in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
