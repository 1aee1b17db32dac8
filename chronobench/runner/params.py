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
