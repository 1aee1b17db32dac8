"""What every system receives from the runner, and helpers for fitting memory into a budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chronobench.protocols import GenerationParams, StreamWrite
from chronobench.systems.prompts import estimate_tokens

if TYPE_CHECKING:
    from chronobench.systems.registry import ChronoMemOptions

# ChronoMem scopes every stream under one app; the stream id is the user.
APP = "chronobench"


@dataclass
class SystemContext:
    """Shared services for systems in one run.

    ``stores`` builds (and caches) the post-exposure ChronoMem store of a stream, so
    systems and selectors that need the same ingested state do not ingest twice;
    ``backbone`` is the run's backbone (behind its call cache), handed only to a system
    whose config asks to consult it before answering (ChronoMem's ``resolver``), else
    None.
    """

    params: GenerationParams = field(default_factory=GenerationParams)
    stores: Any = None  # chronobench.systems.stores.StoreProvider
    backbone: Any = None  # chronobench.protocols.Backbone
    extra: dict[str, Any] = field(default_factory=dict)


def final_state(writes: Sequence[StreamWrite]) -> list[tuple[str, str]]:
    """The items alive after the last write, as ``(item_id, text)`` in order of last change."""
    alive: dict[str, str] = {}
    for write in writes:
        for op in write.changes:
            if op.op in ("delete", "redact") or op.text is None:
                alive.pop(op.item_id, None)
            else:
                # Re-inserting moves an updated item to the end: "most recent" means last written.
                alive.pop(op.item_id, None)
                alive[op.item_id] = op.text
    return list(alive.items())


def all_written_texts(writes: Sequence[StreamWrite]) -> list[str]:
    """Every text ever written, in stream order (what a full transcript holds)."""
    return [op.text for w in writes for op in w.changes if op.text]


def item_order(writes: Sequence[StreamWrite]) -> dict[str, tuple[int, int]]:
    """Each item's first place on the timeline, so a restored snapshot reads in order."""
    order: dict[str, tuple[int, int]] = {}
    for w in writes:
        for i, op in enumerate(w.changes):
            order.setdefault(op.item_id, (w.write_id, i))
    return order


def pack_recent(texts: Sequence[str], budget_tokens: int) -> list[str]:
    """The most recent texts that fit the budget, returned in their original order."""
    kept: list[str] = []
    used = 0
    for text in reversed(texts):
        cost = estimate_tokens(text)
        if used + cost > budget_tokens:
            break
        kept.append(text)
        used += cost
    return kept[::-1]


def pack_spread(texts: Sequence[str], budget_tokens: int) -> list[str]:
    """Texts in order; when over budget, keep an evenly spaced subset so a summary still
    covers the whole timeline instead of only its end."""
    costs = [estimate_tokens(t) for t in texts]
    total = sum(costs)
    if total <= budget_tokens:
        return list(texts)
    keep_fraction = budget_tokens / total
    kept: list[str] = []
    used = 0
    acc = 0.0
    for text, cost in zip(texts, costs, strict=True):
        acc += keep_fraction
        if acc >= 1.0 and used + cost <= budget_tokens:
            kept.append(text)
            used += cost
            acc -= 1.0
    return kept


def pack_ranked(texts: Sequence[str], budget_tokens: int) -> list[str]:
    """Best-first texts until the budget is full (retrieval results)."""
    kept: list[str] = []
    used = 0
    for text in texts:
        cost = estimate_tokens(text)
        if used + cost > budget_tokens:
            continue
        kept.append(text)
        used += cost
    return kept


class RestoringReaderOptions:
    """Options shared by the systems that restore a version and then read from it
    (ChronoMem, directly or through its ADK service)."""

    def __init__(self, ctx: SystemContext, options: ChronoMemOptions) -> None:
        self.ctx = ctx
        self.mode = options.rollback_mode
        self.top_k = options.top_k_items
        self.budget = options.context_budget_tokens
        self.summary_budget = options.summary_budget_tokens
