"""What every repair method is given, what it returns, and the steps they share.

A method gets the failed state (the store after the agent ran the history and the
task, with the provenance it recorded), the failed task trace, the logged session
inputs and the diagnosed fault records; it returns a :class:`RepairOutcome`. Every
method ends with a final answer regenerated through the backbone, so recovery is
comparable; what differs is what is removed, what is re-run, and what that costs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chronobench.tracks.repair.agent import TaskRunner, Trace, workflow
from chronobench.tracks.repair.graph import ProvGraph
from chronobench.tracks.repair.history import (
    Replayed,
    diff_ops,
    materialize,
    read_value,
    replay_timeline,
)
from chronobench.tracks.repair.provenance import Recorder, load_graph
from chronobench.tracks.repair.steps import HistoryAgent


@dataclass
class RepairContext:
    """The failed state a method repairs (``case`` holds only what the agent may see)."""

    mem: Any
    case: dict[str, Any]
    old: Trace
    runner: TaskRunner
    backbone: Any
    method: str
    diagnosed: list[str]  # memory node ids of the diagnosed faults
    unavailable: set[str] = field(default_factory=set)  # sessions that cannot be re-run
    memo: dict[str, str] = field(default_factory=dict)  # the failed run's replies by prompt
    recorded: dict[str, list] | None = None  # the failed history's ops per session (lazy)

    @property
    def scope(self) -> tuple[str, str]:
        """(app, user)."""
        return self.case["app"], self.case["user"]

    def graph(self) -> ProvGraph:
        """The stored provenance graph now."""
        return load_graph(self.mem, *self.scope)

    def agent(self, backbone: Any = None, cls: type[HistoryAgent] = HistoryAgent) -> HistoryAgent:
        """A history agent writing into the task runner's recorder (through ``backbone``,
        default the case's); it re-applies, rather than re-runs, unavailable sessions."""
        agent = cls(self.case, backbone or self.backbone, self.runner.rec, self.runner.params)
        if self.recorded is None:
            self.recorded = recorded_ops(self.graph()) if self.unavailable else {}
        agent.unavailable, agent.recorded = set(self.unavailable), self.recorded
        return agent

    @property
    def labels(self) -> dict[str, str]:
        """Commit labels of the repair."""
        return {"repair": self.method}


@dataclass
class RepairOutcome:
    """The repaired trace and what the repair cost (what it recomputed is in the trace)."""

    trace: Trace
    history_steps: int = 0  # history steps re-executed
    history_calls: int = 0  # backbone calls of those steps
    extra_calls: int = 0  # backbone calls spent deciding (judging), not replaying
    memo_hits: int = 0  # of the calls above, those answered from the failed run's memo
    plan: dict[str, Any] | None = None
    notes: dict[str, Any] = field(default_factory=dict)


def recorded_ops(graph: ProvGraph) -> dict[str, list]:
    """event -> the ops its session applied, from the stored steps."""
    return {s.attrs["event"]: s.attrs["ops"] for s in graph.of_kind("step")
            if s.attrs.get("trace") == "history" and "ops" in s.attrs and s.attrs.get("event")}  # fmt: skip


def resolve_faults(graph: ProvGraph, diagnosed: list[str]) -> list[str]:
    """The diagnosed record nodes; a name the graph lacks (an LLM agent stored the
    session differently) stands for every record that session produced."""
    out = []
    for nid in diagnosed:
        if nid in graph.nodes:
            out.append(nid)
            continue
        event = nid.split(":")[1] if nid.count(":") >= 2 else ""
        out += [e.dst for s in graph.of_kind("step") if s.attrs.get("event") == event
                for e in graph.out_edges(s.node_id) if e.etype == "produce" and graph.nodes[e.dst].kind == "memory"]  # fmt: skip
    return sorted(set(out))


def fault_events(graph: ProvGraph, faults: list[str]) -> set[str]:
    """The sessions that wrote the fault records."""
    out = set()
    for f in faults:
        for e in graph.in_edges(f):
            if e.etype == "produce" and graph.nodes[e.src].attrs.get("event"):
                out.add(graph.nodes[e.src].attrs["event"])
    return out


def delete_ops(ctx: RepairContext, nodes: list[str]) -> tuple[list[dict[str, Any]], dict]:
    """Ops and overlay deleting each record that S(HEAD) still holds (nothing is restored)."""
    graph = ctx.graph()
    head = ctx.mem.snapshot(*ctx.scope)
    ops, overlay = [], {}
    for n in nodes:
        item, text = graph.nodes[n].attrs["item"], graph.nodes[n].attrs["text"]
        if head.get(item) == text and item not in overlay:
            overlay[item] = None
            ops.append({"op": "delete", "item_id": item, "meta": {"action": "delete"}})
    return ops, overlay


def apply_timeline(
    ctx: RepairContext,
    drop: set[str],
    replay: set[str],
    steps: list[str] | Callable[[dict], list[str]] | None,
    value_check: bool = False,
) -> tuple[Trace, Replayed]:
    """Re-walk the history with ``drop`` removed and ``replay`` re-executed, commit the
    resulting state, and replay the task steps ``steps`` (all of them when None; a
    callable gets the overlay of changed items); the store changes and the replays'
    provenance are one commit. ``value_check``: a planned session or args / answer step
    runs only when a slot value it reads changed (the agent's newest-record rule on the
    repaired state against what it read or claimed before)."""
    replayed = replay_timeline(ctx.graph(), ctx.case, ctx.agent(), drop=drop, replay=replay,
                               value_check=value_check)  # fmt: skip
    ops, overlay = diff_ops(ctx.mem.snapshot(*ctx.scope), replayed.items, ctx.method)
    if callable(steps):
        steps = steps(overlay)
    if value_check and steps is not None:
        steps = value_changed_steps(ctx, steps, replayed.items)
    kw = {"overlay": overlay, "repair_ops": ops, "labels": ctx.labels, "nodes": replayed.nodes}
    if steps is None:
        return ctx.runner.run("repair", **kw), replayed
    return ctx.runner.run("repair", old=ctx.old, replay=set(steps), **kw), replayed


def value_changed_steps(ctx: RepairContext, steps: list[str], items: dict[str, str]) -> list[str]:
    """The args / answer steps of ``steps`` whose slots now read another value than the
    failed run claimed (tool steps and the answer follow by the replay's closure)."""
    domain = ctx.case["domain"]
    keep = []
    for spec in workflow(domain):
        if (
            spec.step_id in steps
            and spec.role in ("args", "answer")
            and any(read_value(items, s, domain) != ctx.old.claims.get(s) for s in spec.slots)
        ):
            keep.append(spec.step_id)
    return keep


def history_after(graph: ProvGraph, faults: list[str]) -> set[str]:
    """Every session from the first fault's on, except the faults' own."""
    bad = fault_events(graph, faults)
    first = min((graph.nodes[f].order for f in faults), default=0)
    return {s.attrs["event"] for s in graph.of_kind("step")
            if s.attrs.get("trace") == "history" and s.order >= first and s.attrs.get("event") not in bad}  # fmt: skip


def run_failed(
    mem: Any, visible: dict[str, Any], backbone: Any, params: Any
) -> tuple[TaskRunner, Trace]:
    """Run the agent on the case's history and task into ``mem`` (the failed run);
    returns the task runner (its recorder continues the graph) and the failed trace."""
    rec = Recorder()
    materialize(mem, visible, HistoryAgent(visible, backbone, rec, params))
    runner = TaskRunner(mem, visible, backbone, rec, params)
    return runner, runner.run("run")
