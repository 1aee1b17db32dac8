"""The run's sampling parameters as systems receive them."""

from __future__ import annotations

from typing import Any


def generation_params(spec: Any) -> Any:
    """:class:`~chronobench.protocols.GenerationParams` of a run spec (its backbone's
    generation settings and the run seed)."""
    from chronobench.protocols import GenerationParams

    gen = spec.backbone.generation
    return GenerationParams(
        max_new_tokens=gen.max_new_tokens,
        temperature=gen.temperature,
        top_p=gen.top_p,
        seed=int(spec.seed),
    )


def reads_replies(spec: Any) -> bool:
    """Whether the cell's backbone is a language model, whose replies are read as answers
    (chronobench.metrics.replies); the LLM-free readers' answers are scored as they are."""
    from chronobench.resolver_options import LLM_FREE_BACKBONES

    return spec.backbone.name not in LLM_FREE_BACKBONES


#: Requests per backbone call for an LLM-free reader whose config leaves ``chunk_size`` at
#: 0 (one call per cell): it answers each request on its own, so how the requests are
#: split changes no answer, and the generation loop then holds one chunk of prompts
#: instead of a whole cell's (a full history's 20,000 prompts of ~100 KB held 7 GB).
LLM_FREE_CHUNK = 512


def answer_chunk(spec: Any) -> int:
    """Requests per backbone call in the generation loop: the config's ``chunk_size``, or
    :data:`LLM_FREE_CHUNK` for an LLM-free reader left at 0 (the recorded spec keeps 0)."""
    from chronobench.resolver_options import LLM_FREE_BACKBONES

    size = int(spec.backbone.chunk_size)
    if size == 0 and spec.backbone.name in LLM_FREE_BACKBONES:
        return LLM_FREE_CHUNK
    return size
