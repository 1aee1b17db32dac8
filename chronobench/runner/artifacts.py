"""The on-disk layout of a run: ``results/runs/<run-id>/``.

- ``config.yaml``: the resolved config;
- ``manifest.json``: the whole RunSpec, provenance (git, dataset manifest sha256, user
  query file sha256, library versions, seed, timings, backbone call and token counts),
  the samples' sha256 and the results schema version (:mod:`chronobench.results.schema`);
- ``samples.jsonl``: one line per scored unit (a selector's ranking of one query, or one
  probe answered by the system), appended and fsynced as work finishes so a killed run
  resumes;
- ``metrics.json``: aggregates (n, mean, 95% bootstrap CI), rewritten atomically.

The writers live in :mod:`chronobench.results` (shared with scoring and the leaderboard);
they are re-exported here for the runner's modules.
"""

from __future__ import annotations

from typing import Any

from chronobench.results.io import SampleLog, atomic_write_json, atomic_write_text
from chronobench.results.schema import RESULTS_SCHEMA_VERSION

__all__ = [
    "RESULTS_SCHEMA_VERSION",
    "SampleLog",
    "atomic_write_json",
    "atomic_write_text",
    "query_fields",
]


def query_fields(query: Any) -> dict[str, Any]:
    """The fields every sample row repeats about its rollback query (a RollbackQuery)."""
    return {
        "query_id": query.query_id,
        "stream_id": query.stream_id,
        "intent": query.intent,
        "source": query.source,
        "request": query.text,
        "gold_version": query.target_version,
    }
