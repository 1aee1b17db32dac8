"""Name -> system class, imported lazily so listing systems imports nothing heavy."""

from __future__ import annotations

import importlib
from typing import Any

_REGISTRY: dict[str, str | type] = {
    "chronomem": "chronobench.systems.chronomem:ChronoMemSystem",
    "chronomem_oracle": "chronobench.systems.chronomem:ChronoMemOracleSystem",
    "prompt_only": "baselines.prompt_only:PromptOnlySystem",
    "full_history": "baselines.full_history:FullHistorySystem",
    "rag_only": "baselines.rag_only:RagOnlySystem",
    "no_memory": "baselines.floors:NoMemorySystem",
    "always_abstain": "baselines.floors:AlwaysAbstainSystem",
}


def register_system(name: str, target: str | type) -> None:
    """Register a system class (or a lazy ``"module:Class"`` path) under ``name``."""
    _REGISTRY[name] = target


def system_names() -> list[str]:
    """Registered system names."""
    return sorted(_REGISTRY)


def create_system(name: str, ctx: Any, **kwargs: Any) -> Any:
    """Instantiate the system registered as ``name`` with a :class:`SystemContext`."""
    if name not in _REGISTRY:
        raise KeyError(
            f"unknown system {name!r}; registered: {', '.join(system_names())}. "
            "Register your own with chronobench.systems.register_system(name, 'module:Class')."
        )
    target = _REGISTRY[name]
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
    return target(ctx, **kwargs)
