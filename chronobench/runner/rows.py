"""Fields every sample row of ``samples.jsonl`` repeats, whichever loop wrote it."""

from __future__ import annotations

from typing import Any

from chronobench.data.schema import RollbackQuery


def query_fields(query: RollbackQuery) -> dict[str, Any]:
    """The fields every sample row repeats about its rollback query."""
    return {
        "query_id": query.query_id,
        "stream_id": query.stream_id,
        "intent": query.intent,
        "source": query.source,
        "request": query.text,
        "gold_version": query.target_version,
    }
