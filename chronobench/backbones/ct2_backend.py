"""A packaged model on CTranslate2's int8 CPU runtime (``pip install 'chronobench[llm-ct2]'``).

The dequantised transformers folder of a packaged model
(:func:`chronobench.backbones.packaged.converted_folder`) is converted once more, with
int8 weights, to a CTranslate2 folder under ``<cache>/models/`` (a file lock, a temporary
folder renamed when whole). Prompts are rendered with the model's chat template and
tokenised by its own tokenizer, as the transformers backbone does; greedy unless a
request's temperature is above 0; one prompt at a time.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chronobench import paths
from chronobench.backbones._chat import render_chat
from chronobench.backbones.packaged import PACKAGED_BACKBONES, converted_folder, model_name
from chronobench.fileio import file_lock
from chronobench.protocols import ChatMessage, Completion, GenerationRequest

__all__ = ["CT2Backbone", "ct2_folder"]

COMPUTE_TYPES = ("int8", "int8_float32", "int16", "float32")
# Bump when the conversion changes what lands in the folder.
_RECIPE = "1"


def ct2_folder(model: str, cache_dir: str | os.PathLike[str], quantization: str) -> Path:
    """The CTranslate2 folder of packaged ``model``, converted on first use."""
    source = converted_folder(model, cache_dir)
    target = source.with_name(f"{source.name}-ct2-{quantization}-r{_RECIPE}")
    if (target / "model.bin").is_file():
        return target
    with file_lock(target.with_name(target.name + ".lock")):
        if not (target / "model.bin").is_file():
            import ctranslate2

            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
            try:
                converter = ctranslate2.converters.TransformersConverter(
                    str(_plain_view(source, tmp / "source")), low_cpu_mem_usage=True
                )
                converter.convert(str(tmp / "out"), quantization=quantization, force=True)
                if target.exists():
                    shutil.rmtree(target)
                (tmp / "out").rename(target)  # whole or absent
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def _plain_view(source: Path, view: Path) -> Path:
    """``source`` seen without its ``quantization_config``: the folder's weights are plain
    float32, but its config still names the GGUF file they came from, which CTranslate2's
    converter refuses. Links to every file, and a config.json without that key."""
    view.mkdir(parents=True)
    for f in source.iterdir():
        if f.name != "config.json":
            (view / f.name).symlink_to(f.resolve())
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    config.pop("quantization_config", None)
    (view / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return view


class CT2Backbone:
    """A packaged model (``qwen2.5-1.5b``, ...) on CTranslate2.

    ``compute_type``: the weights' type as loaded (``int8``: the fastest measured here;
    see :data:`COMPUTE_TYPES`), which is also the folder's quantisation. ``threads``:
    CTranslate2's intra-op threads. ``cache_dir``: as the packaged backbone's.
    """

    name = "qwen-1b5-ct2"
    uses_cache_dir = True

    def __init__(
        self,
        model: str = "qwen2.5-1.5b",
        threads: int = 1,
        compute_type: str = "int8",
        cache_dir: str | None = None,
    ) -> None:
        try:
            import ctranslate2
            import transformers
        except ImportError as err:
            raise ImportError(
                "the CTranslate2 backbone needs pip install 'chronobench[llm-cpu,llm-ct2]'"
            ) from err
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute_type must be one of {', '.join(COMPUTE_TYPES)}")
        self.model = model_name(model)
        backbone = next(b for b, m in PACKAGED_BACKBONES.items() if m == self.model)
        self.name = f"{backbone}-ct2"
        self.compute_type = compute_type
        where = cache_dir or paths.cache_dir()
        self.folder = ct2_folder(self.model, where, compute_type)
        self._ct2 = ctranslate2
        self._tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(converted_folder(self.model, where)), local_files_only=True
        )
        self._generator = ctranslate2.Generator(
            str(self.folder),
            device="cpu",
            compute_type=compute_type,
            intra_threads=threads,
            inter_threads=1,
        )
        eos = self._tokenizer.eos_token
        self._end = [eos] if eos else []

    @property
    def cache_config(self) -> dict[str, Any]:
        """Settings that can change outputs; part of the cache key."""
        return {"runtime": "ctranslate2", "compute_type": self.compute_type}

    def token_id(self, token: str) -> int:
        """The vocabulary id of ``token`` as the model's tokenizer writes it."""
        return int(self._tokenizer.convert_tokens_to_ids(token))

    def next_token_logits(self, messages: Sequence[ChatMessage]) -> Any:
        """The model's logits (a float64 numpy vector over the vocabulary) for the first
        token of its reply to ``messages``: one forward pass, nothing generated. For
        scoring a fixed answer ("yes" against "no") without sampling."""
        import numpy as np

        tok = self._tokenizer
        ids = tok(render_chat(tok, messages), add_special_tokens=False).input_ids
        out = self._generator.forward_batch([tok.convert_ids_to_tokens(ids)])
        return np.array(out)[0, -1].astype(np.float64)

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """For each (context, continuation): the summed log-probability of the
        continuation's tokens after the context's (each tokenised on its own, so the
        continuation's tokens are the same under every context). One batch."""
        tok = self._tokenizer
        seqs, starts = [], []
        for ctx, cont in pairs:
            c = tok(ctx, add_special_tokens=False).input_ids
            q = tok(cont, add_special_tokens=False).input_ids
            if not c or not q:
                raise ValueError("loglik: the context and the continuation must be non-empty")
            seqs.append(tok.convert_ids_to_tokens(c + q))
            starts.append(len(c))
        if not seqs:
            return []
        # log_probs[i] is the log-probability of token i + 1.
        out = self._generator.score_batch(seqs)
        return [float(sum(r.log_probs[s - 1 :])) for r, s in zip(out, starts, strict=True)]

    def _one(self, request: GenerationRequest) -> Completion:
        tok = self._tokenizer
        prompt = render_chat(tok, request.messages)
        ids = tok(prompt, add_special_tokens=False).input_ids
        params = request.params
        kwargs: dict[str, Any] = {
            "max_length": params.max_new_tokens,
            "include_prompt_in_result": False,
            "end_token": self._end or None,
        }
        if params.temperature > 0:
            self._ct2.set_random_seed(params.seed)
            kwargs.update(
                sampling_topk=0,
                sampling_temperature=params.temperature,
                sampling_topp=params.top_p,
            )
        else:
            kwargs["sampling_topk"] = 1
        (result,) = self._generator.generate_batch([tok.convert_ids_to_tokens(ids)], **kwargs)
        out_ids = result.sequences_ids[0]
        text = tok.decode(out_ids, skip_special_tokens=True)
        cut = min((text.find(s) for s in params.stop if s and s in text), default=-1)
        text = text[:cut] if cut >= 0 else text
        # CTranslate2 leaves the end token out of the result: counted when it stopped there.
        stopped = len(out_ids) < params.max_new_tokens
        return Completion(text.strip(), len(ids), len(out_ids) + int(stopped))

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Generate every request, one at a time; outputs in request order."""
        return [self._one(r) for r in requests]
