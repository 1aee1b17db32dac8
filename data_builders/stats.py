"""Counts that describe a built dataset (printed by ``build --stats``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from chronobench.data.schema import RollbackQuery, Stream


def _sorted(c: Counter[Any]) -> dict[str, int]:
    return {str(k): v for k, v in sorted(c.items(), key=lambda kv: str(kv[0]))}


def compute_counts(streams: list[Stream], queries: list[RollbackQuery]) -> dict[str, Any]:
    """Streams, writes, queries by intent/source, probes by kind and by kind+category."""
    probes = [p for q in queries for p in q.probes]
    return {
        "streams": len(streams),
        "writes": sum(len(s.writes) for s in streams),
        "queries": len(queries),
        "queries_by_intent": _sorted(Counter(q.intent for q in queries)),
        "queries_by_source": _sorted(Counter(q.source for q in queries)),
        "queries_by_anchor_kind": _sorted(Counter(q.anchor_kind or "none" for q in queries)),
        "probes": len(probes),
        "probes_by_kind": _sorted(Counter(p.kind for p in probes)),
        "probes_by_kind_category": _sorted(
            Counter(f"{p.kind}:{p.category if p.category is not None else '-'}" for p in probes)
        ),
    }


def format_stats(manifest: dict[str, Any]) -> str:
    """Human-readable block for one built folder's manifest."""
    c = manifest["counts"]
    head = f"== {manifest['dataset']} / {manifest['granularity']} =="
    lines = [
        head,
        f"streams {c['streams']}  writes {c['writes']}  queries {c['queries']}  probes {c['probes']}",
        f"queries by intent: {c['queries_by_intent']}",
        f"queries by source: {c['queries_by_source']}",
        f"queries by anchor kind: {c['queries_by_anchor_kind']}",
        f"dropped anchors ({sum(manifest['dropped_anchors'].values())}): {manifest['dropped_anchors']}",
        _annotation_line(manifest),
        f"skipped source items: {manifest['skipped']}",
        f"probes by kind: {c['probes_by_kind']}",
        f"probes by kind:category: {c['probes_by_kind_category']}",
    ]
    extra = manifest.get("extra") or {}
    if "future_candidates_skipped" in extra:
        # Future-probe candidates passed over (category rules, answer before v*).
        lines.append(f"future-probe candidates skipped: {extra['future_candidates_skipped']}")
    return "\n".join(lines)


def _annotation_line(manifest: dict[str, Any]) -> str:
    """Anchors dropped by the annotation uniqueness filter (data_builders/uniqueness.py)."""
    keys = (":annotation_", ":verbatim_in_index")
    ann = {k: v for k, v in manifest["dropped_anchors"].items() if any(x in k for x in keys)}
    p = manifest.get("parameters", {})
    rule = (
        f"share {p.get('annotation_share', '-')}, min weight {p.get('annotation_min_weight', '-')}"
    )
    return f"annotation uniqueness drops ({rule}): {sum(ann.values())} {ann}"
