"""Offline vLLM backbone: every prompt of a call goes to vLLM in one batched generate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chronobench.backbones._chat import render_chat
from chronobench.protocols import Completion, GenerationParams, GenerationRequest

__all__ = ["VLLMBackbone"]


class VLLMBackbone:
    """A local model served by ``vllm.LLM``.

    vllm is imported here, on construction, so selecting another backbone never needs
    it. Prompts are rendered with the model's own chat template; sampling parameters
    are mapped per request and the whole call is one ``llm.generate`` so vLLM can batch
    it. Outputs keep the order of the requests.
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        tensor_parallel_size: int = 1,
        dtype: str = "auto",
        max_model_len: int | None = None,
        seed: int = 0,
        gpu_memory_utilization: float = 0.9,
        chat_template: str | None = None,
        use_tqdm: bool = True,
        **engine_kwargs: Any,
    ) -> None:
        try:
            import vllm
        except ImportError as err:
            raise ImportError(
                "the 'vllm' backbone needs vllm: pip install 'chronobench[vllm]' "
                "(on a machine with a CUDA GPU), or pick backbone=extractive"
            ) from err
        self.model = model
        self.chat_template = chat_template
        self.use_tqdm = use_tqdm
        self._sampling_params = vllm.SamplingParams
        llm_kwargs: dict[str, Any] = {
            "model": model,
            "tensor_parallel_size": tensor_parallel_size,
            "dtype": dtype,
            "seed": seed,
            "gpu_memory_utilization": gpu_memory_utilization,
            **engine_kwargs,
        }
        if max_model_len is not None:
            llm_kwargs["max_model_len"] = max_model_len
        self.engine_config = {k: v for k, v in llm_kwargs.items() if k != "model"}
        self._llm = vllm.LLM(**llm_kwargs)
        self._tokenizer = self._llm.get_tokenizer()

    @property
    def cache_config(self) -> dict[str, Any]:
        """Settings that can change outputs; part of the cache key."""
        return {
            "dtype": str(self.engine_config.get("dtype")),
            "chat_template": self.chat_template,
        }

    def _sampling(self, params: GenerationParams) -> Any:
        return self._sampling_params(
            temperature=params.temperature,
            top_p=params.top_p,
            max_tokens=params.max_new_tokens,
            seed=params.seed,
            stop=list(params.stop) or None,
        )

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Generate all ``requests`` in one batched vLLM call; outputs in request order,
        with vLLM's token counts."""
        if not requests:
            return []
        prompts = [render_chat(self._tokenizer, r.messages, self.chat_template) for r in requests]
        sampling = [self._sampling(r.params) for r in requests]
        outputs = self._llm.generate(prompts, sampling, use_tqdm=self.use_tqdm)
        if len(outputs) != len(requests):
            raise RuntimeError(f"vllm returned {len(outputs)} outputs for {len(requests)} prompts")
        return [
            Completion(
                out.outputs[0].text.strip(),
                _count(getattr(out, "prompt_token_ids", None)),
                _count(getattr(out.outputs[0], "token_ids", None)),
            )
            for out in outputs
        ]


def _count(token_ids: Any) -> int | None:
    """How many tokens vLLM reports (None when it reports none)."""
    return None if token_ids is None else len(token_ids)
