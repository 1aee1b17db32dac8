"""RQ1: score every selector's ranking of every rollback query (no generation)."""

from __future__ import annotations

from typing import Any

from chronobench.metrics import score_refusal, score_selection
from chronobench.protocols import RefusingSelector, public_writes
from chronobench.results.io import SampleLog
from chronobench.results.records import SelectionRecord
from chronobench.runner.components import Components
from chronobench.runner.datasets import RunData
from chronobench.runner.progress import task
from chronobench.runner.rows import query_fields


def selection_sample_id(selector: str, query_id: str) -> str:
    """Stable id of one selector's ranking of one query."""
    return f"sel/{selector}/{query_id}"


def run_selection(
    data: RunData,
    cell: Components,
    stores: Any,
    log: SampleLog,
    done: set[str],
    *,
    k: int,
    progress: bool,
) -> int:
    """Rank versions for every (selector, query) not yet in ``done``; returns rows written."""
    by_stream = data.queries_by_stream()
    depth = max(k, 10)
    written = 0
    selectors = list(cell.spec.selectors)
    total = len(selectors) * len(data.queries)
    with task(total, "RQ1 selection", enabled=progress) as bar:
        for stream in data.streams:
            queries = by_stream.get(stream.stream_id, [])
            writes = None
            for name in selectors:
                todo = [q for q in queries if selection_sample_id(name, q.query_id) not in done]
                bar.skip(len(queries) - len(todo))
                if not todo:
                    continue
                writes = writes or public_writes(stream)
                # A selector sees the public writes and the request texts under opaque ids
                # (query ids name the anchor's session).
                opaque = {f"r{i}": q for i, q in enumerate(todo, start=1)}
                selector = cell.build_selector(name, stores)
                ranked = selector.search(
                    writes, {rid: q.text for rid, q in opaque.items()}, top_k=depth
                )
                refusals = selector.refusals if isinstance(selector, RefusingSelector) else {}
                rows = []
                for rid, q in opaque.items():
                    cands = ranked.get(rid, [])
                    # A request that names nothing in memory is right only when refused.
                    refuse = q.meta.get("expect") == "refuse"
                    rows.append(
                        SelectionRecord(
                            sample_id=selection_sample_id(name, q.query_id),
                            selector=name,
                            **query_fields(q),
                            n_versions=stream.n_versions,
                            ranked=[(v, round(s, 6)) for v, s in cands],
                            scores=score_refusal(cands)
                            if refuse
                            else score_selection([v for v, _ in cands], q.target_version, k),
                            refused=refusals.get(rid),
                        )
                    )
                written += log.append(rows)
                bar.update(len(todo))
    return written
