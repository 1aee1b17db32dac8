"""Build LoCoMo streams, rollback queries and probe pools for one granularity."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from chronobench.data.schema import RollbackQuery
from data_builders.battery import battery_record, stream_battery
from data_builders.locomo.anchors import (
    annotation_indexes,
    event_anchors,
    indexed_text,
    qa_anchors,
)
from data_builders.locomo.params import LocomoParams
from data_builders.locomo.pool import build_pool, finish_probes
from data_builders.locomo.source import load_locomo
from data_builders.locomo.streams import GRANULARITIES, build_stream
from data_builders.probes import attach_probes
from data_builders.queries import filter_anchors, make_query, select
from data_builders.result import BuildResult
from data_builders.uniqueness import filter_by_annotations

CAVEATS = [
    "Write.summary is None: event_summary feeds anchors and summary references, and "
    "session_summary paraphrases the same content, so neither may be indexed.",
    "Evidence ids are normalised ('D8:6; D9:17' split, 'D:11:26' -> 'D11:26', "
    "'D30:05' -> 'D30:5'); QA items still naming unknown turns are left out (see skipped).",
    "Category 5 (adversarial) probes have answers=[] (gold: abstain) and keep the "
    "dataset's adversarial_answer in meta; they are never future probes or anchors.",
    "Turn/observation granularity: event anchors target session boundaries; a session "
    "counts as committed at v* when all of its writes are <= v*.",
    "Observation granularity: a turn is committed by the first observation citing it; "
    "an uncited turn spans its whole session (answerable only after the session ends).",
]


def build_locomo(source: Path, granularity: str, p: LocomoParams) -> BuildResult:
    """Build one granularity of LoCoMo from a validated source file with the build
    parameters ``p``."""
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity must be one of {GRANULARITIES}, got {granularity!r}")
    records = load_locomo(source)
    res = BuildResult(streams=[], queries=[], pools=[], caveats=list(CAVEATS))
    future_skipped: Counter[str] = Counter()  # future-probe candidates passed over, by reason
    for rec in sorted(records, key=lambda r: r["sample_id"]):
        sb = build_stream(rec, granularity)
        pool, skipped = build_pool(
            rec,
            sb,
            path=source,
            params=p,
        )
        res.skipped.update({f"qa:{k}": v for k, v in skipped.items()})
        anchors = event_anchors(rec, sb)
        qa_list, qa_drops = qa_anchors(pool, sb, granularity)
        kept, drops = filter_anchors(anchors + qa_list, threshold=p.jaccard_threshold)
        kept, ann_drops = filter_by_annotations(
            kept,
            annotation_indexes(rec, sb),
            indexed_text=indexed_text(sb),
            share=p.annotation_share,
            min_weight=p.annotation_min_weight,
        )
        res.dropped_anchors.update(qa_drops)
        res.dropped_anchors.update(drops)
        res.dropped_anchors.update(ann_drops)
        stream = sb.stream
        stream.meta["battery"] = battery_record(stream_battery(pool, stream))
        queries: list[RollbackQuery] = []
        for anchor, intent in select(kept, stream.stream_id, p.max_queries_per_stream, p.seed):
            q = make_query(anchor, intent, stream.stream_id, p.seed)
            q.probes = attach_probes(
                pool,
                stream,
                q.query_id,
                q.target_version,
                exclude_qa=anchor.exclude_qa,
                stats=future_skipped,
                request=q.text,
            )
            queries.append(q)
        res.extra.setdefault("anchors_kept", Counter()).update(a.kind for a in kept)
        res.streams.append(stream)
        res.pools.append(pool)
        res.queries.extend(sorted(queries, key=lambda q: q.query_id))
    res.extra["anchors_kept"] = dict(sorted(res.extra["anchors_kept"].items()))
    finish_probes(res, future_skipped)
    return res
