"""ChronoMem: a versioned long-term memory store with natural-language rollback.

Quick start::

    from chronomem import ChronoMem

    with ChronoMem("memory.db") as mem:
        mem.commit("app", "ann", [{"op": "add", "item_id": "city", "text": "Ann lives in Oslo"}],
                   source="chat", reason="user said so")
        mem.rollback_to_version_by_nl_query("app", "ann", "undo the move to Oslo")

The names below load on first use, so ``import chronomem`` (and a light submodule such
as :mod:`chronomem.defaults`) costs nothing until the store itself is needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> the module defining it
_EXPORTS = {
    "BackboneResolver": "chronomem.backbone_resolver",
    "Embedder": "chronomem.embedders",
    "EmbeddingCache": "chronomem.embedders",
    "HashEmbedder": "chronomem.embedders",
    "SentenceTransformerEmbedder": "chronomem.embedders",
    "resolve_embedder": "chronomem.embedders",
    "split_windows": "chronomem.embedders",
    "content_query": "chronomem.query",
    "detect_intent": "chronomem.query",
    "fts_expression": "chronomem.query",
    "CrossEncoderReranker": "chronomem.rerank",
    "DeltaReranker": "chronomem.rerank",
    "Reranker": "chronomem.rerank",
    "apply_intent": "chronomem.resolve",
    "rrf": "chronomem.resolve",
    "ChronoMem": "chronomem.store",
    **dict.fromkeys(
        (
            "ChronoMemError",
            "DependentChangesError",
            "EmptyScopeError",
            "HeadMovedError",
            "InvalidOpError",
            "RollbackPlan",
            "RollbackResult",
            "SearchHit",
            "SelectivePlan",
            "StoreBusyError",
            "StoreConnectionError",
            "UncertainRequestError",
            "UnknownVersionError",
            "VersionRecord",
            "UnknownBranchError",
            "MergeConflictError",
        ),
        "chronomem.types",
    ),
}

__all__ = [
    "__version__",
    "BackboneResolver",
    "ChronoMem",
    "ChronoMemError",
    "CrossEncoderReranker",
    "DeltaReranker",
    "DependentChangesError",
    "Embedder",
    "EmbeddingCache",
    "EmptyScopeError",
    "HashEmbedder",
    "HeadMovedError",
    "InvalidOpError",
    "MergeConflictError",
    "Reranker",
    "RollbackPlan",
    "RollbackResult",
    "SearchHit",
    "SelectivePlan",
    "SentenceTransformerEmbedder",
    "StoreBusyError",
    "StoreConnectionError",
    "UncertainRequestError",
    "UnknownBranchError",
    "UnknownVersionError",
    "VersionRecord",
    "apply_intent",
    "content_query",
    "detect_intent",
    "fts_expression",
    "resolve_embedder",
    "rrf",
    "split_windows",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'chronomem' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:
    from chronomem.backbone_resolver import BackboneResolver
    from chronomem.embedders import (
        Embedder,
        EmbeddingCache,
        HashEmbedder,
        SentenceTransformerEmbedder,
        resolve_embedder,
        split_windows,
    )
    from chronomem.query import content_query, detect_intent, fts_expression
    from chronomem.rerank import CrossEncoderReranker, DeltaReranker, Reranker
    from chronomem.resolve import apply_intent, rrf
    from chronomem.store import ChronoMem
    from chronomem.types import (
        ChronoMemError,
        DependentChangesError,
        EmptyScopeError,
        HeadMovedError,
        InvalidOpError,
        MergeConflictError,
        RollbackPlan,
        RollbackResult,
        SearchHit,
        SelectivePlan,
        StoreBusyError,
        StoreConnectionError,
        UncertainRequestError,
        UnknownBranchError,
        UnknownVersionError,
        VersionRecord,
    )
