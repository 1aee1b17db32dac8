"""Repair methods: dependency-guided repair, its ablations, and the baselines.

Each method gets the failed state (the store after the failed run, with provenance),
the failed trace and the diagnosed fault ids, and returns a :class:`RepairOutcome`.
It reads the case only through :func:`method_case` (the task and the diagnosis): the
gold run, the fault list and the records' roles stay with the scorer.
Every method ends with a final answer (regenerated through the backbone), so recovery
is comparable; what differs is what is removed from memory and what is re-run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chronobench.protocols import as_completion
from chronobench.repair.agent import MEMO_ITEM, TaskRunner, Trace, _request, memory_view, workflow
from chronobench.repair.planner import plan_repair
from chronobench.repair.provenance import Recorder, load_graph


@dataclass
class RepairOutcome:
    """The repaired trace, what was invalidated, and the cost beyond the replayed steps."""

    trace: Trace
    invalidated: list[str]  # claim keys the method treated as invalid
    extra_calls: int = 0  # backbone calls spent deciding (judging), not replaying
    plan: dict[str, Any] | None = None
    notes: dict[str, Any] = field(default_factory=dict)


# What a repair method, and the agent it reruns, may read of a case.
METHOD_CASE_KEYS = (
    "case_id",
    "app",
    "user",
    "domain",
    "request",
    "params",
    "task_day",
    "diagnosed",
)


def method_case(case: dict[str, Any]) -> dict[str, Any]:
    """The case as a repair method sees it: the task and the diagnosed fault ids only."""
    return {k: case[k] for k in METHOD_CASE_KEYS}


def _fault_nodes(case: dict[str, Any]) -> list[str]:
    return [f"mem:{rid}" for rid in case["diagnosed"]]


def _delete_ops(
    mem: Any, case: dict[str, Any], items_texts: list[tuple[str, str]]
) -> tuple[list, dict]:
    """Ops and overlay deleting each (item, text) that S(HEAD) still holds."""
    head = mem.snapshot(case["app"], case["user"])
    ops, overlay = [], {}
    for item, text in items_texts:
        if head.get(item) == text and item not in overlay:
            overlay[item] = None
            ops.append({"op": "delete", "item_id": item, "meta": {"action": "delete"}})
    return ops, overlay


def _diagnosed_records(mem: Any, case: dict[str, Any]) -> list[tuple[str, str]]:
    graph = load_graph(mem, case["app"], case["user"])
    return [
        (graph.nodes[n].attrs["item"], graph.nodes[n].attrs["text"]) for n in _fault_nodes(case)
    ]


def _all_keys(old: Trace) -> list[str]:
    return sorted(old.claims)


def dgr(
    ctx: dict[str, Any], *, support_check: bool = True, selective: bool = True
) -> RepairOutcome:
    """Dependency-guided repair (and its no-support-check / no-selective-replay ablations)."""
    mem, case, old, runner = ctx["mem"], ctx["case"], ctx["old"], ctx["runner"]
    plan = plan_repair(
        load_graph(mem, case["app"], case["user"]), _fault_nodes(case), support_check=support_check
    )
    labels = {"repair": ctx["method"]}
    _record_plan(runner.rec, plan)
    if selective:
        trace = runner.run("repair", old=old, replay=set(plan.replay_steps), overlay=plan.overlay,
                           repair_ops=plan.store_ops, labels=labels)  # fmt: skip
        invalid = plan.invalidated_claims
    else:
        trace = runner.run("repair", overlay=plan.overlay, repair_ops=plan.store_ops, labels=labels)
        invalid = _all_keys(old)
    return RepairOutcome(trace, invalid, plan=plan.to_dict())


def _record_plan(rec: Recorder, plan: Any) -> None:
    """The planner as a step of the graph: delete edges to what it removes, update edges
    to what it restores (written with the repair commit)."""
    step = rec.node("step:repair:plan", "step", trace="repair", call="planner", role="plan")
    for a in plan.actions:
        if a.action in ("delete", "quarantine"):
            rec.edge(step, a.node_id, "delete")
        elif a.action == "restore":
            rec.edge(step, a.node_id, "update")


def no_planner(ctx: dict[str, Any]) -> RepairOutcome:
    """Ablation: delete the faults, replay the steps that cite one directly and the answer
    step; derived memories, superseded records and tool observations stay as they are."""
    mem, case, old, runner = ctx["mem"], ctx["case"], ctx["old"], ctx["runner"]
    graph = load_graph(mem, case["app"], case["user"])
    direct = {graph.nodes[e.dst].attrs.get("sid") for f in _fault_nodes(case) for e in graph.out_edges(f)
              if e.etype == "cite" and e.dst.startswith("step:run:")}  # fmt: skip
    replay = {s for s in direct if s} | {"answer"}
    ops, overlay = _delete_ops(mem, case, _diagnosed_records(mem, case))
    trace = runner.run("repair", old=old, replay=replay, overlay=overlay, repair_ops=ops,
                       labels={"repair": ctx["method"]})  # fmt: skip
    invalid = sorted(
        k for s in old.steps if s["step_id"] in replay for k in s["outputs"] if k in old.claims
    )
    return RepairOutcome(trace, invalid)


def delete_only(ctx: dict[str, Any]) -> RepairOutcome:
    """Baseline: remove the diagnosed faults, keep every other memory, rerun the task."""
    ops, overlay = _delete_ops(ctx["mem"], ctx["case"], _diagnosed_records(ctx["mem"], ctx["case"]))
    trace = ctx["runner"].run(
        "repair", overlay=overlay, repair_ops=ops, labels={"repair": ctx["method"]}
    )
    return RepairOutcome(trace, _all_keys(ctx["old"]))


def full_reset(ctx: dict[str, Any]) -> RepairOutcome:
    """Baseline: drop all memory (ChronoMem back to its empty root), rerun the task."""
    mem, case = ctx["mem"], ctx["case"]
    mem.rollback_to_version(case["app"], case["user"], 0, reason="repair: full reset")
    trace = _fresh_runner(ctx).run("repair", labels={"repair": ctx["method"]})
    return RepairOutcome(trace, _all_keys(ctx["old"]))


def version_rollback(ctx: dict[str, Any]) -> RepairOutcome:
    """Baseline: ChronoMem rollback to the version before the first diagnosed fault's
    commit (truncate: everything after it is gone), rerun the task."""
    mem, case = ctx["mem"], ctx["case"]
    graph = load_graph(mem, case["app"], case["user"])
    first = min(graph.nodes[n].attrs["version"] for n in _fault_nodes(case))
    parent = next(
        v.parent for v in mem.versions(case["app"], case["user"]) if v.version_id == first
    )
    mem.rollback_to_version(case["app"], case["user"], int(parent or 0), reason="repair: rollback")
    trace = _fresh_runner(ctx).run("repair", labels={"repair": ctx["method"]})
    return RepairOutcome(trace, _all_keys(ctx["old"]), notes={"rolled_back_to": parent})


def backbone_judged(ctx: dict[str, Any]) -> RepairOutcome:
    """Baseline: the backbone sees the diagnosed faults and judges every active memory
    (drop or keep); dropped ones are deleted, then the task is rerun."""
    mem, case, backbone = ctx["mem"], ctx["case"], ctx["backbone"]
    faults = [t for _, t in _diagnosed_records(mem, case)]
    head = memory_view(mem, case["app"], case["user"], None)
    q = "Diagnosed faulty memories are marked FAULT. Should the CANDIDATE memory be dropped? Reply drop or keep."
    items = sorted(head)
    reqs = [_request("repair_judge", [f"FAULT: {f}" for f in faults] + [f"CANDIDATE: {head[i]}"], q, ctx["runner"].params)
            for i in items]  # fmt: skip
    verdicts = [as_completion(c).text for c in backbone.generate(reqs)] if reqs else []
    dropped = [(i, head[i]) for i, v in zip(items, verdicts, strict=True) if "drop" in v.lower()]
    ops, overlay = _delete_ops(mem, case, dropped)
    trace = ctx["runner"].run(
        "repair", overlay=overlay, repair_ops=ops, labels={"repair": ctx["method"]}
    )
    return RepairOutcome(
        trace,
        _all_keys(ctx["old"]),
        extra_calls=len(reqs),
        notes={"dropped": [i for i, _ in dropped]},
    )


def _fresh_runner(ctx: dict[str, Any]) -> TaskRunner:
    """A runner whose recorder continues whatever provenance survived a truncate."""
    mem, case = ctx["mem"], ctx["case"]
    return TaskRunner(
        mem,
        case,
        ctx["backbone"],
        Recorder.resume(mem, case["app"], case["user"]),
        ctx["runner"].params,
    )


METHODS: dict[str, Callable[[dict[str, Any]], RepairOutcome]] = {
    "dgr": dgr,
    "dgr_no_planner": no_planner,
    "dgr_no_support_check": lambda ctx: dgr(ctx, support_check=False),
    "dgr_no_selective_replay": lambda ctx: dgr(ctx, selective=False),
    "delete_only": delete_only,
    "full_reset_replay": full_reset,
    "rollback_replay": version_rollback,
    "backbone_judged": backbone_judged,
}
LABELS = {
    "dgr": "Dependency-guided repair",
    "dgr_no_planner": "  w/o rollback planner",
    "dgr_no_support_check": "  w/o support check",
    "dgr_no_selective_replay": "  w/o selective replay",
    "delete_only": "Delete-only + rerun",
    "full_reset_replay": "Full reset + full replay",
    "rollback_replay": "Version rollback + replay",
    "backbone_judged": "Backbone-judged repair + rerun",
}
STEPS_PER_TASK = {d: len(workflow(d)) for d in ("shopping", "travel", "customer_support")}
__all__ = ["LABELS", "METHODS", "METHOD_CASE_KEYS", "MEMO_ITEM", "RepairOutcome", "method_case"]
