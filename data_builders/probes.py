"""Attaching probes to a rollback query at any ``v*`` from a stream's pool.

The pool models live in :mod:`data_builders.pools` (re-exported here), the stream's
question battery and its per-query labels in :mod:`data_builders.battery`; this module
is what the builders call: a query's probes and the stream's ``final_qa`` probes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chronobench.data.schema import Stream
from data_builders.battery import final_probes, label_probes
from data_builders.boundary import boundary_windows, recall_question
from data_builders.pools import (
    FUTURE_CATEGORIES,
    POOL_CAPS,
    PoolConflict,
    PoolFact,
    PoolQA,
    PoolSession,
    ProbePool,
    past_text,
)
from data_builders.summaries import SUMMARY_QUESTION, budget_question, summary_probe

__all__ = [
    "FUTURE_CATEGORIES",
    "POOL_CAPS",
    "SUMMARY_QUESTION",
    "PoolConflict",
    "PoolFact",
    "PoolQA",
    "PoolSession",
    "ProbePool",
    "add_final_probes",
    "summary_probe",
    "attach_probes",
    "boundary_windows",
    "budget_question",
    "past_text",
    "recall_question",
]


#: The scored probes of a query at ``v*``: the stream's battery labelled for that v*
#: (every query of the stream is asked the whole battery; these are the ones that count).
attach_probes = label_probes


def add_final_probes(
    queries: Iterable[Any], pools: Iterable[ProbePool], streams: Iterable[Stream]
) -> int:
    """Give each stream its ``final_qa`` probes (:func:`data_builders.battery.final_probes`:
    the battery asked once at the stream's last version, no rollback), attached to the
    stream's first query by ``query_id``; the runner asks them in one session after all
    of the stream's queries. Returns the number added."""
    by_pool = {p.stream_id: p for p in pools}
    by_stream = {s.stream_id: s for s in streams}
    first: dict[str, Any] = {}
    for q in sorted(queries, key=lambda q: q.query_id):
        first.setdefault(q.stream_id, q)
    added = 0
    for sid, q in first.items():
        if sid not in by_pool or sid not in by_stream:
            continue
        extra = final_probes(by_pool[sid], by_stream[sid], q.query_id)
        q.probes.extend(extra)
        added += len(extra)
    return added
