"""Backbones: what turns a prompt batch into text (the :class:`~chronobench.protocols.Backbone`
protocol).

Registered names: ``extractive`` (no LLM; the offline default), ``scripted`` (tests),
``vllm``, ``openai`` (any OpenAI-compatible server), ``transformers``. Heavy
dependencies are imported only when a backbone is created. Wrap any backbone in
:class:`CachedBackbone` to get the persistent call cache.
"""

from chronobench.backbones.cache import CachedBackbone, CacheStats, request_key
from chronobench.backbones.registry import (
    available_backbones,
    create_backbone,
    register_backbone,
    resolve_backbone,
)

__all__ = [
    "CacheStats",
    "CachedBackbone",
    "available_backbones",
    "create_backbone",
    "register_backbone",
    "request_key",
    "resolve_backbone",
]
