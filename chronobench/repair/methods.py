"""The repair methods by name: dependency-guided repair, its ablations, the baselines and
the text-heuristic floors (:mod:`~chronobench.repair.dgr`,
:mod:`~chronobench.repair.baselines`)."""

from __future__ import annotations

from collections.abc import Callable

from chronobench.repair.agent import MEMO_ITEM, workflow
from chronobench.repair.baselines import BASELINES
from chronobench.repair.context import RepairContext, RepairOutcome
from chronobench.repair.dgr import ABLATIONS

METHODS: dict[str, Callable[[RepairContext], RepairOutcome]] = {**ABLATIONS, **BASELINES}
LABELS = {
    "dgr": "Dependency-guided repair",
    "dgr_no_planner": "  w/o rollback planner",
    "dgr_no_support_check": "  w/o support check",
    "dgr_no_selective_replay": "  w/o selective replay",
    "dgr_prompt_provenance": "  w/o backbone citations (prompt-level provenance)",
    "dgr_record_support": "  w/ record-level support (no value-level check)",
    "dgr_checked_citations": "  w/ citations checked against the prompt",
    "delete_only": "Delete-only + rerun",
    "full_reset_replay": "Full reset + whole-history replay",
    "rollback_replay": "Version rollback + replay",
    "backbone_judged": "Backbone-judged repair + rerun",
    "text_floor": "Text-heuristic floor (review's rule)",
    "text_floor_replay": "Text heuristic + session replay",
    "text_taint_replay": "Text heuristic + transitive session replay",
    "value_replay": "Graph-free value-change replay",
    "memo_replay": "Prompt-memoised full replay",
}
STEPS_PER_TASK = {d: len(workflow(d)) for d in ("shopping", "travel", "customer_support")}
__all__ = ["LABELS", "METHODS", "MEMO_ITEM", "RepairContext", "RepairOutcome"]
