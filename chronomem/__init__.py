"""ChronoMem: a versioned long-term memory store with natural-language rollback.

Quick start::

    from chronomem import ChronoMem

    with ChronoMem(":memory:") as mem:
        mem.commit("app", "ann", [{"op": "add", "item_id": "city", "text": "Ann lives in Oslo"}],
                   source="chat", reason="user said so")
        mem.rollback_to_version_by_nl_query("app", "ann", "undo the move to Oslo")
"""

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
