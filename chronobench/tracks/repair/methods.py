"""The repair methods by name: dependency-guided repair, its ablations, the baselines and
the text-heuristic floors (:mod:`~chronobench.tracks.repair.dgr`,
:mod:`~chronobench.tracks.repair.baselines`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from chronobench.registry import Registry
from chronobench.tracks.repair.agent import MEMO_ITEM, workflow
from chronobench.tracks.repair.baselines import BASELINES
from chronobench.tracks.repair.context import RepairContext, RepairOutcome
from chronobench.tracks.repair.dgr import ABLATIONS
from chronobench.tracks.repair.graph_free import READS, graph_free_planner

#: Repair method name -> its function, with its table label (indented: an ablation of the
#: row above) and table order; ``floor``: the text heuristics, the track's floors
#: (docs/repair.md). The one list: :data:`METHODS` and :data:`LABELS` are read from it.
REPAIR_METHODS = Registry(
    "repair_method",
    hint="add a function to chronobench.tracks.repair.baselines.BASELINES and a row to _TABLE",
)
_TABLE = (
    ("dgr", "Dependency-guided repair"),
    ("dgr_no_planner", "  w/o rollback planner"),
    ("dgr_no_support_check", "  w/o support check"),
    ("dgr_no_selective_replay", "  w/o selective replay"),
    ("dgr_prompt_provenance", "  w/o backbone citations (prompt-level provenance)"),
    ("dgr_record_support", "  w/ record-level support (no value-level check)"),
    ("dgr_checked_citations", "  w/ citations checked against the prompt"),
    ("delete_only", "Delete-only + rerun"),
    ("full_reset_replay", "Full reset + whole-history replay"),
    ("rollback_replay", "Version rollback + replay"),
    ("backbone_judged", "Backbone-judged repair + rerun"),
    ("text_floor", "Text-heuristic floor (review's rule)"),
    ("text_floor_replay", "Text heuristic + session replay"),
    ("text_taint_replay", "Text heuristic + transitive session replay"),
    ("value_replay", "Graph-free value-change replay"),
    ("memo_replay", "Prompt-memoised full replay"),
    ("graph_free_planner", "Graph-free planner (log and versions, three rules)"),
    ("graph_free_planner_lexical", "  retrieved records guessed from the query's words"),
    ("graph_free_planner_slot", "  every session that could have read the slot re-run"),
    (
        "graph_free_planner_retriever",
        "  the agent's retriever re-run on the versions (not log-only)",
    ),
)
_FUNCTIONS: dict[str, Callable[[RepairContext], RepairOutcome]] = {
    **ABLATIONS,
    **BASELINES,
    "graph_free_planner": graph_free_planner,
    **{f"graph_free_planner_{r}": partial(graph_free_planner, reads=r) for r in READS[1:]},
}
_unmatched = set(_FUNCTIONS) ^ {name for name, _ in _TABLE}
if _unmatched:
    raise RuntimeError(
        f"repair methods need both a function and a _TABLE row: {sorted(_unmatched)}"
    )
for _i, (_name, _label) in enumerate(_TABLE):
    REPAIR_METHODS.register(
        _name,
        _FUNCTIONS[_name],
        label=_label,
        order=10 * (_i + 1),
        meta={"floor": _name.startswith("text_")},
    )

METHODS: dict[str, Callable[[RepairContext], RepairOutcome]] = {
    e.name: e.target for e in REPAIR_METHODS.entries()
}
LABELS: dict[str, str] = {e.name: e.row_label for e in REPAIR_METHODS.entries()}


def is_floor(method: str) -> bool:
    """Whether repair method ``method`` is one of the track's floors."""
    return method in REPAIR_METHODS and bool(REPAIR_METHODS.entry(method).meta.get("floor"))


STEPS_PER_TASK = {d: len(workflow(d)) for d in ("shopping", "travel", "customer_support")}
__all__ = [
    "LABELS",
    "MEMO_ITEM",
    "METHODS",
    "REPAIR_METHODS",
    "RepairContext",
    "RepairOutcome",
    "is_floor",
]
