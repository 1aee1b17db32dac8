"""Dependency-guided repair and its ablations (each removes one mechanism, keeps the rest).

- ``dgr``: plan on the recorded provenance, re-run the sessions that produced
  unsupported state, replay the answer-relevant task steps.
- ``dgr_no_planner``: delete the faults; replay the task steps that cite one and the
  answer step; derived records, overwritten records and tool observations stay.
- ``dgr_no_support_check``: every traced candidate is unsupported except records the
  user stated outright (their own words are still evidence).
- ``dgr_no_selective_replay``: the plan's removals, then every session from the first
  fault on and the whole task are re-run.
- ``dgr_prompt_provenance``: plan on the provenance an agent records when its backbone
  does not cite: every record a step's prompt showed is jointly its evidence.
- ``dgr_record_support``: support checked per record, not per value (the earlier rule):
  a node that used one value of a summary whose other merged value lost its support is
  re-derived, and a task step shown an unsupported record is replayed.
- ``dgr_checked_citations``: DGR on the citations the prompts bear out: a line whose
  cited record is not the newest shown record stating its slot (or states another value)
  gets its whole prompt as evidence, as if it cited nothing (robustness to noisy
  citations; identical to ``dgr`` when citations are exact).
"""

from __future__ import annotations

from chronobench.tracks.repair.context import (
    RepairContext,
    RepairOutcome,
    apply_timeline,
    delete_ops,
    history_after,
)
from chronobench.tracks.repair.planner import (
    RepairPlan,
    checked_citations,
    plan_repair,
    prompt_level,
)
from chronobench.tracks.repair.provenance import Recorder


def dgr(
    ctx: RepairContext,
    *,
    support_check: bool = True,
    selective: bool = True,
    cited: bool = True,
    value_level: bool = True,
    checked: bool = False,
) -> RepairOutcome:
    """Dependency-guided repair (see module doc for the switches)."""
    graph = ctx.graph()
    if checked:
        graph = checked_citations(graph, ctx.case["domain"])
    plan = plan_repair(
        graph if cited else prompt_level(graph),
        ctx.diagnosed,
        support_check=support_check,
        value_level=value_level,
        unavailable=ctx.unavailable,
    )
    _record_plan(ctx.runner.rec, plan)
    drop = set(plan.faults) | set(plan.quarantined)
    if selective:
        trace, rp = apply_timeline(
            ctx, drop, set(plan.replay_events), plan.replay_steps, value_check=value_level
        )
    else:
        trace, rp = apply_timeline(ctx, drop, history_after(graph, plan.faults), None)
    notes = {"rerun": rp.events, "kept_by_value_check": rp.kept}
    return RepairOutcome(trace, rp.steps, rp.calls, plan=plan.to_dict(), notes=notes)


def _record_plan(rec: Recorder, plan: RepairPlan) -> None:
    """The planner as a step of the graph: delete edges to what it removes, update edges
    to what comes back (written with the repair commit)."""
    step = rec.node("step:repair:plan", "step", trace="repair", call="planner", role="plan")
    for a in plan.actions:
        if a.action in ("delete", "quarantine"):
            rec.edge(step, a.node_id, "delete")
        elif a.action == "restore":
            rec.edge(step, a.node_id, "update")


def no_planner(ctx: RepairContext) -> RepairOutcome:
    """Ablation: delete the faults and replay the task steps citing one, plus the answer."""
    graph = ctx.graph()
    direct = {graph.nodes[e.dst].attrs.get("sid") for f in ctx.diagnosed for e in graph.out_edges(f)
              if e.etype == "cite" and e.dst.startswith("step:run:")}  # fmt: skip
    replay = {s for s in direct if s} | {"answer"}
    ops, overlay = delete_ops(ctx, ctx.diagnosed)
    trace = ctx.runner.run(
        "repair", old=ctx.old, replay=replay, overlay=overlay, repair_ops=ops, labels=ctx.labels
    )
    return RepairOutcome(trace)


ABLATIONS = {
    "dgr": dgr,
    "dgr_no_planner": no_planner,
    "dgr_no_support_check": lambda ctx: dgr(ctx, support_check=False),
    "dgr_no_selective_replay": lambda ctx: dgr(ctx, selective=False),
    "dgr_prompt_provenance": lambda ctx: dgr(ctx, cited=False),
    "dgr_record_support": lambda ctx: dgr(ctx, value_level=False),
    "dgr_checked_citations": lambda ctx: dgr(ctx, checked=True),
}
