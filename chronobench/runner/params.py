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
