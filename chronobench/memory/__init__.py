"""ChronoMem: a versioned long-term memory store with natural-language rollback.

Quick start::

    from chronobench.memory import ChronoMem

    with ChronoMem(":memory:") as mem:
        mem.commit("app", "ann", [{"op": "add", "item_id": "city", "text": "Ann lives in Oslo"}],
                   source="chat", reason="user said so")
        mem.rollback_to_version_by_nl_query("app", "ann", "undo the move to Oslo")
"""

from chronobench.memory.backbone_resolver import BackboneResolver
from chronobench.memory.embedders import (
    Embedder,
    EmbeddingCache,
    HashEmbedder,
    SentenceTransformerEmbedder,
    resolve_embedder,
    split_windows,
)
from chronobench.memory.query import content_query, detect_intent, fts_expression
from chronobench.memory.rerank import CrossEncoderReranker, DeltaReranker, Reranker
from chronobench.memory.resolve import apply_intent, rrf
from chronobench.memory.store import ChronoMem
from chronobench.memory.types import (
    ChronoMemError,
    DependentChangesError,
    EmptyScopeError,
    HeadMovedError,
    InvalidOpError,
    RollbackPlan,
    RollbackResult,
    SearchHit,
    SelectivePlan,
    StoreBusyError,
    StoreConnectionError,
    UncertainRequestError,
    UnknownVersionError,
    VersionRecord,
)

__all__ = [
    "BackboneResolver",
    "ChronoMem",
    "ChronoMemError",
    "CrossEncoderReranker",
    "DeltaReranker",
    "DependentChangesError",
    "Embedder",
    "EmbeddingCache",
    "EmptyScopeError",
    "HeadMovedError",
    "HashEmbedder",
    "InvalidOpError",
    "Reranker",
    "RollbackPlan",
    "RollbackResult",
    "SearchHit",
    "SelectivePlan",
    "SentenceTransformerEmbedder",
    "StoreBusyError",
    "StoreConnectionError",
    "UncertainRequestError",
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
