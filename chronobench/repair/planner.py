"""Tracing, independent-support checking and the deterministic repair planner.

1. Trace: every node reachable from a diagnosed fault along propagation edges is an
   affected candidate (an over-approximation).
2. Support check, in time order: a candidate stays valid when one of its evidence
   groups (support / derive / consolidate edges sharing a group label) lies wholly
   outside the faulty set and the candidates already found unsupported; admissible
   evidence is a trusted input, a valid memory record, or a valid claim (a successful
   tool observation or an unaffected validated claim). A claim the policy produced from
   an empty memory (``default``) needs no evidence.
3. Plan: delete the faults; quarantine unsupported memories; restore a supported record
   whose every superseder is removed; invalidate unsupported claims; replay the task
   steps that produced an invalidated claim and can still reach the final answer, plus
   the answer-relevant steps that consume their outputs (execution closure). Every
   node gets an action and a reason.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from chronobench.repair.graph import EVIDENCE, PROPAGATION, ProvGraph


@dataclass(frozen=True)
class NodeAction:
    """What the plan does with one node, and why."""

    node_id: str
    kind: str
    action: str
    reason: str


@dataclass
class RepairPlan:
    """An inspectable repair plan: printable (``str``) and JSON (``to_dict``)."""

    faults: list[str]
    affected: list[str]
    unsupported: list[str]
    actions: list[NodeAction]
    replay_steps: list[str]  # task step ids (e.g. "args1"), trace order
    store_ops: list[dict[str, Any]] = field(default_factory=list)
    overlay: dict[str, str | None] = field(default_factory=dict)
    invalidated_claims: list[str] = field(default_factory=list)  # claim keys

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {**asdict(self), "actions": [asdict(a) for a in self.actions]}

    def to_json(self) -> str:
        """The plan as indented JSON."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def __str__(self) -> str:
        lines = [
            f"repair plan: {len(self.faults)} fault(s), {len(self.affected)} affected, "
            f"{len(self.unsupported)} unsupported, replay {self.replay_steps or 'nothing'}"
        ]
        width = max((len(a.node_id) for a in self.actions), default=10)
        for a in self.actions:
            lines.append(f"  {a.node_id:<{width}}  {a.kind:<6}  {a.action:<10}  {a.reason}")
        return "\n".join(lines)


def trace_affected(graph: ProvGraph, faults: set[str]) -> dict[str, str]:
    """Affected candidates -> the node they were first reached from (BFS, for reasons)."""
    parent: dict[str, str] = {}
    queue = sorted(faults)
    while queue:
        nxt = []
        for nid in queue:
            for e in graph.out_edges(nid):
                if e.etype in PROPAGATION and e.dst not in faults and e.dst not in parent:
                    parent[e.dst] = f"{nid} ({e.etype})"
                    nxt.append(e.dst)
        queue = sorted(nxt)
    return parent


def check_support(
    graph: ProvGraph, faults: set[str], affected: set[str], *, enabled: bool = True
) -> tuple[set[str], dict[str, str]]:
    """(unsupported candidates, reason per candidate); ``enabled=False`` is the ablation
    that treats every candidate as unsupported."""
    bad, why = set(faults), {}
    for node in sorted((graph.nodes[n] for n in affected), key=lambda n: n.order):
        if node.kind == "step":
            continue
        if not enabled:
            bad.add(node.node_id)
            why[node.node_id] = "support check disabled"
            continue
        groups: dict[str, list[str]] = defaultdict(list)
        for e in graph.in_edges(node.node_id):
            if e.etype in EVIDENCE:
                groups[e.group or e.src].append(e.src)
        ok = [g for g, srcs in sorted(groups.items()) if all(_valid(graph, s, bad) for s in srcs)]
        if ok:
            why[node.node_id] = "independent support: " + ", ".join(groups[ok[0]])
        elif not groups and node.attrs.get("default"):
            why[node.node_id] = "policy default (no memory read), needs no evidence"
        else:
            bad.add(node.node_id)
            why[node.node_id] = "no evidence group outside the faulty/affected sets"
    return bad - faults, why


def _valid(graph: ProvGraph, src: str, bad: set[str]) -> bool:
    node = graph.nodes[src]
    if node.kind == "input":
        return bool(node.attrs.get("trusted"))
    return src not in bad


def plan_repair(
    graph: ProvGraph, fault_nodes: list[str], *, run_tag: str = "run", support_check: bool = True
) -> RepairPlan:
    """The deterministic plan for repairing the task trace ``run_tag`` (see module doc)."""
    missing = [f for f in fault_nodes if f not in graph.nodes]
    if missing:
        raise KeyError(f"diagnosed faults not in the provenance graph: {missing}")
    faults = set(fault_nodes)
    via = trace_affected(graph, faults)
    affected = set(via)
    unsupported, why = check_support(graph, faults, affected, enabled=support_check)
    removed = faults | {n for n in unsupported if graph.nodes[n].kind == "memory"}
    answer = f"claim:{run_tag}:answer"
    relevant = graph.ancestors({answer}) if answer in graph.nodes else set()
    prefix = f"step:{run_tag}:"
    replay = set()
    for nid in sorted(affected):
        node = graph.nodes[nid]
        if node.kind == "step" and nid.startswith(prefix) and nid in relevant:
            outs = [e.dst for e in graph.out_edges(nid) if e.etype == "produce"]
            consumes = [e.src for e in graph.in_edges(nid) if e.etype == "cite"]
            if any(o in unsupported for o in outs) or any(c in unsupported for c in consumes):
                replay.add(nid)
    actions, overlay, ops = [], {}, []
    for node in sorted(graph.nodes.values(), key=lambda n: n.order):
        act, reason = _decide(
            graph, node, faults, affected, unsupported, removed, via, why, replay, relevant, prefix
        )
        actions.append(NodeAction(node.node_id, node.kind, act, reason))
        item = node.attrs.get("item")
        if act in ("delete", "quarantine") and node.attrs.get("active"):
            overlay.setdefault(item, None)
            ops.append(
                {"op": "delete", "item_id": item, "meta": {"action": act, "node": node.node_id}}
            )
        elif act == "restore":
            overlay[item] = node.attrs["text"]
            ops.append({"op": "update", "item_id": item, "text": node.attrs["text"],
                        "meta": {"action": act, "node": node.node_id}})  # fmt: skip
    ops = _merge_ops(ops)
    steps = sorted(replay, key=lambda n: graph.nodes[n].order)
    claims = sorted(graph.nodes[n].attrs["key"] for n in unsupported if graph.nodes[n].kind == "claim" and n.startswith(f"claim:{run_tag}:"))  # fmt: skip
    return RepairPlan(
        faults=sorted(faults), affected=sorted(affected), unsupported=sorted(unsupported),
        actions=actions, replay_steps=[graph.nodes[s].attrs["sid"] for s in steps],
        store_ops=ops, overlay=overlay, invalidated_claims=claims,
    )  # fmt: skip


def _merge_ops(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One op per item: a restore of an item wins over the delete of its faulty holder."""
    by_item: dict[str, dict[str, Any]] = {}
    for op in ops:
        if op["item_id"] not in by_item or op["op"] == "update":
            by_item[op["item_id"]] = op
    return list(by_item.values())


def _decide(
    graph, node, faults, affected, unsupported, removed, via, why, replay, relevant, prefix
):  # noqa: ANN001, PLR0911, PLR0913
    nid, kind = node.node_id, node.kind
    if nid in faults:
        return "delete", "diagnosed fault"
    if nid not in affected:
        return "untouched", "not reachable from a diagnosed fault"
    reached = f"reached from {via[nid]}"
    if kind == "memory":
        if nid in unsupported:
            return "quarantine", f"{reached}; {why[nid]}"
        if node.attrs.get("active"):
            return "keep", f"{reached}; {why[nid]}"
        superseders = [e.src for e in graph.in_edges(nid) if e.etype == "supersede"]
        item = node.attrs.get("item")
        holder = [
            m.node_id
            for m in graph.of_kind("memory")
            if m.attrs.get("active") and m.attrs.get("item") == item
        ]
        if holder and holder[0] not in removed:
            return "keep", f"{reached}; inactive, its item now holds {holder[0]} (kept)"
        if superseders and all(s in removed for s in superseders):
            return "restore", f"{reached}; every superseder removed; {why[nid]}"
        return "keep", f"{reached}; inactive, superseded by a kept record"
    if kind == "claim":
        if nid in unsupported:
            return "invalidate", f"{reached}; {why[nid]}"
        return "keep", f"{reached}; {why[nid]}"
    if kind == "step" and nid.startswith(prefix):
        if nid in replay:
            return "replay", f"{reached}; answer-relevant and has an invalidated input or output"
        if nid not in relevant:
            return "skip", f"{reached}; cannot reach the final answer, outputs invalidated only"
        return "reuse", f"{reached}; every input and output independently supported"
    return "none", f"{reached}; past step, its outputs are handled above"
