"""Settling ChronoMem's backbone request resolver in a run spec's system options (the
resolver's default settings are the store's: :mod:`chronomem.defaults`).

``system.resolver=auto`` means the backbone for a language-model backbone and off for
an LLM-free one; :func:`settle_resolver` makes it concrete before the spec is hashed
(:mod:`chronobench.spec`, which re-exports these names).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Backbones that are no language model: they cannot read numbered candidates and pick
#: one, so ``system.resolver=auto`` is off with them (and ``backbone`` is an error, raised
#: when the runner resolves the cell).
LLM_FREE_BACKBONES = frozenset({"extractive"})
#: The system keys of the backbone request resolver (chronomem.backbone_resolver).
RESOLVER_KEYS = ("resolver", "resolver_top_k", "resolver_max_chars")


def settle_resolver(system: Mapping[str, Any], backbone: str | None) -> dict[str, Any]:
    """``system`` options with ``resolver: auto`` made concrete: ``backbone`` for a
    language-model backbone, ``none`` for an LLM-free one (:data:`LLM_FREE_BACKBONES`).
    A resolver that is off leaves no key behind, so a spec names a resolver only when
    one runs (and runs without one keep the run ids they had before it existed)."""
    out = dict(system)
    if "resolver" not in out:
        return out
    value = out["resolver"]
    if value == "auto":
        value = "none" if backbone in LLM_FREE_BACKBONES else "backbone"
    if value == "none":
        for key in RESOLVER_KEYS:
            out.pop(key, None)
        return out
    out["resolver"] = value  # any other value: the system's options model rejects it
    return out
