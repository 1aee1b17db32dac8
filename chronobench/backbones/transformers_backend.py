"""Local Hugging Face generation (CPU or GPU), batched with left padding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chronobench.backbones._chat import render_chat
from chronobench.protocols import Completion, GenerationParams, GenerationRequest

__all__ = ["TransformersBackbone"]


class TransformersBackbone:
    """``AutoModelForCausalLM`` + ``AutoTokenizer`` with the model's chat template.

    torch and transformers are imported on construction. Requests are grouped by
    sampling parameters and generated ``batch_size`` at a time (greedy unless the
    temperature is above 0); stop strings cut the text after generation.
    """

    name = "transformers"

    def __init__(
        self,
        model: str,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        chat_template: str | None = None,
        trust_remote_code: bool = False,
        local_files_only: bool = False,
    ) -> None:
        try:
            import torch
            import transformers
        except ImportError as err:
            raise ImportError(
                "the 'transformers' backbone needs torch and transformers installed"
            ) from err
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.batch_size = batch_size
        self.chat_template = chat_template
        self._torch = torch
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        load = {"trust_remote_code": trust_remote_code, "local_files_only": local_files_only}
        try:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(
                model, padding_side="left", **load
            )
            torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
            self._model = transformers.AutoModelForCausalLM.from_pretrained(
                model, dtype=torch_dtype, **load
            ).to(self.device)
        except (OSError, ValueError) as err:
            raise ValueError(
                f"transformers backbone: cannot load model {model!r}: {err}. Give a local "
                "model directory or a hub name reachable from this machine"
            ) from err
        self._model.eval()
        if self._tokenizer.pad_token is None:
            self._tokenizer.pad_token = self._tokenizer.eos_token

    @property
    def cache_config(self) -> dict[str, Any]:
        """Settings that can change outputs; part of the cache key. The batch size is
        one: a left-padded batch can change a greedy reply by a token, so a cached reply
        must come from a batch of the size asked for."""
        return {"chat_template": self.chat_template, "batch_size": self.batch_size}

    def _batch(self, prompts: list[str], params: GenerationParams) -> list[Completion]:
        torch = self._torch
        enc = self._tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        sample = params.temperature > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": params.max_new_tokens,
            "do_sample": sample,
            "pad_token_id": self._tokenizer.pad_token_id,
        }
        if sample:
            torch.manual_seed(params.seed)
            kwargs.update(temperature=params.temperature, top_p=params.top_p)
        with torch.no_grad():
            out = self._model.generate(**enc, **kwargs)
        new_tokens = out[:, enc["input_ids"].shape[1] :]
        texts = self._tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        prompt_n = enc["attention_mask"].sum(dim=1).tolist()
        eos = self._tokenizer.eos_token_id
        return [
            Completion(_cut(t, params.stop).strip(), int(p), _generated(row.tolist(), eos))
            for t, p, row in zip(texts, prompt_n, new_tokens, strict=True)
        ]

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """For each (context, continuation): the summed log-probability of the
        continuation's tokens after the context's (each tokenised on its own), one
        forward pass a pair."""
        torch = self._torch
        tok = self._tokenizer
        out = []
        for ctx, cont in pairs:
            c = tok(ctx, add_special_tokens=False).input_ids
            q = tok(cont, add_special_tokens=False).input_ids
            if not c or not q:
                raise ValueError("loglik: the context and the continuation must be non-empty")
            ids = torch.tensor([c + q], device=self.device)
            with torch.no_grad():
                logits = self._model(ids).logits[0, len(c) - 1 : -1].float()
            logp = torch.log_softmax(logits, dim=-1)
            picked = logp.gather(1, torch.tensor(q, device=self.device).unsqueeze(1))
            out.append(float(picked.sum()))
        return out

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Generate every request; outputs in request order, with token counts."""
        results: list[Completion] = [Completion("")] * len(requests)
        groups: dict[GenerationParams, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.params, []).append(i)
        for params, idx in groups.items():
            rendered = {
                i: render_chat(self._tokenizer, requests[i].messages, self.chat_template)
                for i in idx
            }
            if self.batch_size > 1:
                # Prompts of about one length share a batch: less padding to compute.
                idx = sorted(idx, key=lambda i: len(rendered[i]))
            for start in range(0, len(idx), self.batch_size):
                chunk = idx[start : start + self.batch_size]
                prompts = [rendered[i] for i in chunk]
                for i, completion in zip(chunk, self._batch(prompts, params), strict=True):
                    results[i] = completion
        return results


def _generated(tokens: list[int], eos: int | None) -> int:
    """Tokens the model generated: up to and including its first end-of-sequence (the
    rest of the row is padding, which is the same token)."""
    if eos is not None and eos in tokens:
        return tokens.index(eos) + 1
    return len(tokens)


def _cut(text: str, stops: tuple[str, ...]) -> str:
    cut = min((text.find(s) for s in stops if s and s in text), default=-1)
    return text[:cut] if cut >= 0 else text
