"""Build MemoryAgentBench streams, rollback queries and probe pools for one split."""

from __future__ import annotations

from collections import Counter
from typing import Any

from chronobench.data.schema import RollbackQuery, Stream
from data_builders.battery import battery_record, stream_battery
from data_builders.mab.chunking import chunk_context, numbered_statements
from data_builders.mab.common import locate_questions, row_stream_id, texts_stream
from data_builders.mab.conflict import conflict_pairs
from data_builders.mab.params import MabParams
from data_builders.mab.summary import name_anchors
from data_builders.probes import ProbePool, attach_probes
from data_builders.queries import Anchor, filter_anchors, make_query, select
from data_builders.result import BuildResult

SUM_PREFIX = "infbench_sum"
CAVEATS = {
    "Accurate_Retrieval": [
        "v* of a question = first chunk containing any gold string (normalised); questions "
        "whose gold never appears in the context are skipped.",
        "Tokens are whitespace tokens, an approximation of model tokens.",
    ],
    "Conflict_Resolution": [
        "Only statements shaped 'The REL of SUBJ is VAL' or 'SUBJ's REL is VAL' are paired; "
        "the rest are counted as statement:unparsed.",
        "Anchors name the fact slot, which is also indexed text: selector scores on this "
        "split measure lexical retrieval more than on LoCoMo.",
        "The dataset's own questions (latest value, often multi-hop) are not used as probes.",
    ],
    "Long_Range_Understanding": [
        "infbench_sum reference summaries cover the whole book, not the prefix up to v*; "
        "summary scores after rollback are bounded by that mismatch.",
        "Anchors are names first seen in a chunk, taken from indexed text.",
    ],
}


def _granularity(split: str, chunk_size: int, chunk_unit: str) -> str:
    return "statement" if split == "Conflict_Resolution" else f"chunk{chunk_size}{chunk_unit}"


def _row(
    split: str,
    row: dict[str, Any],
    i: int,
    *,
    chunk_size: int,
    chunk_unit: str,
    caps: dict[str, int],
) -> tuple[Stream, ProbePool, list[Anchor], Counter[str]]:
    sid = row_stream_id(split, row, i)
    gran = _granularity(split, chunk_size, chunk_unit)
    pool = ProbePool(stream_id=sid, scoring="mab", **caps)
    counts: Counter[str] = Counter()
    if split == "Conflict_Resolution":
        statements = [s for _, s in numbered_statements(row["context"])]
        if not statements:
            counts["row:no_numbered_statements"] += 1
        stream = texts_stream(sid, split, row, i, statements, gran)
        pool.conflicts, anchors, counts2 = conflict_pairs(statements, sid)
        counts.update(counts2)
        counts["questions_unused"] += len(row["questions"])
        return stream, pool, anchors, counts
    stream = texts_stream(
        sid, split, row, i, chunk_context(row["context"], chunk_size, chunk_unit), gran
    )
    if split == "Long_Range_Understanding" and row["metadata"]["source"].startswith(SUM_PREFIX):
        golds = [a for ans in row["answers"] for a in ans if a.strip()]
        pool.summary_reference = golds[0] if golds else None
        pool.summary_caveat = "reference covers the whole book, not the prefix up to v*"
        if not golds:
            counts["row:no_reference_summary"] += 1
        return stream, pool, name_anchors(stream), counts
    pool.qas, anchors, counts2 = locate_questions(row, stream)
    counts.update(counts2)
    return stream, pool, anchors, counts


def build_mab(split: str, rows: list[dict[str, Any]], p: MabParams) -> BuildResult:
    """Build one split from its loaded ``rows`` with the build parameters ``p``."""
    res = BuildResult(streams=[], queries=[], pools=[], caveats=list(CAVEATS.get(split, [])))
    # MAB has no sessions to anchor boundary probes, no recall statements and no
    # category-5 items (its QAs carry no category): those caps are MAB's own, not the
    # pool's defaults (battery_adversarial keeps the 1 its built pools always recorded).
    caps = {
        "max_answerable": p.max_answerable,
        "max_future": p.max_future,
        "max_boundary": 0,
        "max_recall": 0,
        "max_far": 0,
        "battery_qa": p.battery_qa,
        "battery_recall": 0,
        "battery_adversarial": 1,
        "seed": p.seed,
    }
    for i, row in enumerate(rows):
        stream, pool, anchors, counts = _row(
            split, row, i, chunk_size=p.chunk_size, chunk_unit=p.chunk_unit, caps=caps
        )
        res.skipped.update(counts)
        stream.meta["battery"] = battery_record(stream_battery(pool, stream))
        kept, drops = filter_anchors(anchors, threshold=p.jaccard_threshold)
        res.dropped_anchors.update(drops)
        queries: list[RollbackQuery] = []
        for anchor, intent in select(kept, stream.stream_id, p.max_queries_per_stream, p.seed):
            q = make_query(anchor, intent, stream.stream_id, p.seed)
            q.probes = attach_probes(
                pool,
                stream,
                q.query_id,
                q.target_version,
                exclude_qa=anchor.exclude_qa,
                prefer_qa=anchor.prefer_qa,
                request=q.text,
            )
            queries.append(q)
        res.streams.append(stream)
        res.pools.append(pool)
        res.queries.extend(sorted(queries, key=lambda q: q.query_id))
    res.extra["granularity"] = _granularity(split, p.chunk_size, p.chunk_unit)
    return res
