"""Backbones by name, as lazy ``"module:Class"`` entries.

Nothing heavy is imported until :func:`create_backbone` resolves a name, so importing
:mod:`chronobench.backbones` never pulls in torch, vllm, transformers or httpx.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

from chronobench.protocols import Backbone

__all__ = [
    "available_backbones",
    "backbone_names",
    "create_backbone",
    "register_backbone",
    "resolve_backbone",
]

T = TypeVar("T")

_REGISTRY: dict[str, str | type] = {
    "extractive": "chronobench.backbones.extractive:ExtractiveBackbone",
    "scripted": "chronobench.backbones.scripted:ScriptedBackbone",
    "vllm": "chronobench.backbones.vllm_backend:VLLMBackbone",
    "openai": "chronobench.backbones.openai_backend:OpenAIBackbone",
    "transformers": "chronobench.backbones.transformers_backend:TransformersBackbone",
}


def register_backbone(name: str, target: str | type | None = None) -> Any:
    """Register a backbone under ``name``.

    ``register_backbone("mine", "pkg.module:MyBackbone")`` adds a lazy entry;
    ``@register_backbone("mine")`` on a class registers the class itself.
    Re-registering a name replaces the previous entry.
    """
    if not name or not isinstance(name, str):
        raise ValueError(f"register_backbone: name must be a non-empty string, got {name!r}")
    if target is not None:
        if isinstance(target, str) and ":" not in target:
            raise ValueError(
                f"register_backbone({name!r}): target {target!r} must look like 'module:Class'"
            )
        _REGISTRY[name] = target
        return target

    def decorator(cls: type[T]) -> type[T]:
        _REGISTRY[name] = cls
        return cls

    return decorator


def available_backbones() -> list[str]:
    """Registered backbone names, sorted."""
    return sorted(_REGISTRY)


backbone_names = available_backbones  # the name the runner and config tests use


def resolve_backbone(name: str) -> Callable[..., Backbone]:
    """Import and return the class registered as ``name`` (without instantiating it)."""
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise KeyError(
            f"unknown backbone {name!r}; registered: {', '.join(available_backbones())} "
            "(add one with chronobench.backbones.register_backbone)"
        ) from None
    if not isinstance(target, str):
        return target
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ImportError(f"backbone {name!r}: {module_name} has no attribute {attr!r}") from None


def create_backbone(name: str, **kwargs: Any) -> Backbone:
    """Instantiate the backbone registered as ``name`` with ``kwargs``."""
    return resolve_backbone(name)(**kwargs)
