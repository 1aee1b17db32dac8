"""Cell formatting and the paired margin the repair section's tables share."""

from __future__ import annotations

from typing import Any

from chronobench.metrics.bootstrap import summarise
from chronobench.tracks.repair.methods import LABELS

BASELINES = ("graph_free_planner", "value_replay", "memo_replay", "full_reset_replay", "rollback_replay", "delete_only",
              "backbone_judged", "text_floor", "text_floor_replay", "text_taint_replay")  # fmt: skip
ABLATIONS = (
    "dgr_no_planner",
    "dgr_no_support_check",
    "dgr_no_selective_replay",
    "dgr_prompt_provenance",
    "dgr_record_support",
    "dgr_checked_citations",
)
FAMILIES = ("paraphrase", "coincidence", "tool_argument", "consolidation", "multi_hop")


def _fmt(value: float | None, scale: float) -> str:
    if value is None:
        return "-"
    return f"{value * scale:.1f}" if scale == 100 else f"{value * scale:.2f}"


def fmt_cell(stat: dict[str, Any] | None, scale: float, ci: bool = False) -> str:
    if not stat or stat.get("mean") is None:
        return "-"
    text = _fmt(stat["mean"], scale)
    if ci:
        text += f" [{_fmt(stat['ci_low'], scale)}, {_fmt(stat['ci_high'], scale)}]"
    return text


def method_label(method: str) -> str:
    return LABELS.get(method, method).strip()


def margin(
    a: dict[str, Any], b: dict[str, Any], metric: str, seed: int = 0
) -> dict[str, Any] | None:
    """Mean of ``a - b`` per case with a 95% bootstrap interval over cases (paired), from
    two runs' ``per_case`` blocks; None when the runs did not score the same cases."""
    pa, pb = a.get("per_case"), b.get("per_case")
    if not pa or not pb or pa["case_id"] != pb["case_id"] or metric not in pa:
        return None
    return summarise([x - y for x, y in zip(pa[metric], pb[metric], strict=True)], seed=seed)
