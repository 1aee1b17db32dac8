"""Tracing, independent-support checking and the deterministic repair planner, on the
provenance the agent recorded.

1. Trace: every node reachable from a diagnosed fault along propagation edges is an
   affected candidate (an over-approximation: a record merely shown in a prompt
   reaches everything that step produced). A record an affected step overwrote is a
   candidate too (it may come back), but tracing does not continue from it.
2. Support check, in time order: a candidate stays valid when one of its evidence
   groups (support / derive / consolidate edges sharing a group label) lies wholly
   outside the faults and the candidates already found unsupported. Admissible
   evidence: the input of a session not diagnosed, a valid record, a valid claim. A claim the
   backbone answered ``unknown`` (``default``) needs none. When the backbone cited
   several sources for one line, the newest must be valid: the agent's rule is that the
   most recent record wins, so an older agreeing record does not hold the decision.
3. Plan: delete the faults; re-derive every unsupported record or claim a history
   session produced by replaying that session (its logged input, the repaired memory of
   its time); quarantine the other unsupported records (the failed task's note);
   invalidate unsupported task claims; replay the task steps that produced or consume
   an unsupported node and can still reach the final answer.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

from chronobench.tracks.repair.domains import parse_record
from chronobench.tracks.repair.graph import EVIDENCE, PROPAGATION, Edge, ProvGraph
from chronobench.tracks.repair.lexicon import read_pairs


@dataclass(frozen=True)
class NodeAction:
    """What the plan does with one node, and why."""

    node_id: str
    kind: str
    action: str
    reason: str


@dataclass
class RepairPlan:
    """An inspectable repair plan: printable (``str``) and JSON (``to_json``)."""

    faults: list[str]
    affected: list[str]
    unsupported: list[str]
    quarantined: list[str]
    replay_events: list[str]  # history sessions to re-execute, time order
    replay_steps: list[str]  # task step ids (e.g. "args1"), trace order
    invalidated_claims: list[str]  # task claim keys
    actions: list[NodeAction]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {**asdict(self), "actions": [asdict(a) for a in self.actions]}

    def to_json(self) -> str:
        """The plan as indented JSON."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def __str__(self) -> str:
        lines = [
            f"repair plan: {len(self.faults)} fault(s), {len(self.affected)} affected, "
            f"{len(self.unsupported)} unsupported; re-run sessions {self.replay_events or 'none'}, "
            f"replay task steps {self.replay_steps or 'none'}"
        ]
        width = max((len(a.node_id) for a in self.actions), default=10)
        for a in self.actions:
            lines.append(f"  {a.node_id:<{width}}  {a.kind:<6}  {a.action:<10}  {a.reason}")
        return "\n".join(lines)


# A record an affected step overwrote (update) or an affected record replaced (supersede)
# is a candidate for coming back, but its own content is not affected: tracing stops there.
_TERMINAL = frozenset({"update", "supersede"})


def trace_affected(graph: ProvGraph, faults: set[str]) -> dict[str, str]:
    """Affected candidates -> the node they were first reached from (BFS, for reasons)."""
    parent: dict[str, str] = {}
    queue = sorted(faults)
    expanded = set(faults)
    while queue:
        nxt = []
        for nid in queue:
            for e in graph.out_edges(nid):
                if e.etype not in PROPAGATION or e.dst in faults:
                    continue
                parent.setdefault(e.dst, f"{nid} ({e.etype})")
                if e.etype not in _TERMINAL and e.dst not in expanded:
                    expanded.add(e.dst)
                    nxt.append(e.dst)
        queue = sorted(nxt)
    return parent


def stated_by_user(graph: ProvGraph, node_id: str) -> bool:
    """Whether the backbone took the record from a trusted input alone (the user's words)."""
    return any(
        e.etype == "support" and e.group == e.src and graph.nodes[e.src].kind == "input"
        and graph.nodes[e.src].attrs.get("trusted")
        for e in graph.in_edges(node_id)
    )  # fmt: skip


def slot_of(graph: ProvGraph, node_id: str) -> str | None:
    """The one slot a claim or single-slot record states (None: several, or unknown)."""
    node = graph.nodes[node_id]
    if node.kind == "claim":
        return node.attrs.get("key")
    item = str(node.attrs.get("item", ""))
    prefix, _, slot = item.partition(":")
    return slot if node.kind == "memory" and prefix in ("pref", "ext", "note", "tool") else None


def check_support(
    graph: ProvGraph,
    faults: set[str],
    affected: set[str],
    *,
    enabled: bool = True,
    value_level: bool = True,
) -> tuple[set[str], dict[str, str]]:
    """(unsupported candidates, reason per candidate). ``enabled=False`` is the ablation:
    every candidate is unsupported except records the user stated outright.
    ``value_level``: a summary record that is itself unsupported (one merged value lost
    its support) still supports a node that used only a value of it whose merge claim
    is supported: the re-derived summary states that value again."""
    # A session's own input is admissible evidence unless the session is a diagnosed
    # fault's: most untrusted inputs (pastes, syncs) are correct, and the diagnosis, not
    # the input's kind, says which are not.
    fault_inputs = {e.src for f in faults if (p := producer(graph, f))
                    for e in graph.in_edges(p) if e.etype == "initiate"}  # fmt: skip
    bad, why = set(faults) | fault_inputs, {}
    for node in sorted((graph.nodes[n] for n in affected), key=lambda n: n.order):
        nid = node.node_id
        if node.kind == "step":
            continue
        if not enabled:
            if node.kind == "memory" and stated_by_user(graph, nid):
                why[nid] = "the user's own statement (kept without a support check)"
            else:
                bad.add(nid)
                why[nid] = "support check disabled"
            continue
        groups: dict[str, list[str]] = defaultdict(list)
        for e in graph.in_edges(nid):
            if e.etype in EVIDENCE:
                groups[e.group or e.src].append(e.src)
        slot = slot_of(graph, nid) if value_level else None
        ok = [
            g
            for g, srcs in sorted(groups.items())
            if all(_valid(graph, s, bad, slot) for s in srcs)
        ]
        cited = [g for g, srcs in groups.items() if srcs == [g]]  # one cited source each
        if len(cited) > 1:
            # The agent's rule is that the newest record wins: several cited records that
            # agree do not hold a decision in place when the newest of them changes.
            newest = max(cited, key=lambda g: graph.nodes[g].order)
            ok = [g for g in ok if g not in cited or newest in ok]
        if ok:
            why[nid] = "independent support: " + ", ".join(groups[ok[0]])
        elif not groups and node.attrs.get("default"):
            why[nid] = "answered unknown (no memory read), needs no evidence"
        else:
            bad.add(nid)
            why[nid] = "no evidence group outside the faulty/affected sets"
    return bad - faults - fault_inputs, why


def _valid(graph: ProvGraph, src: str, bad: set[str], slot: str | None = None) -> bool:
    node = graph.nodes[src]
    if node.kind == "input":
        return src not in bad
    if src in bad and slot and node.kind == "memory":
        merged = [e.src for e in graph.in_edges(src) if e.etype == "consolidate"]
        same = [c for c in merged if graph.nodes[c].attrs.get("key") == slot]
        return bool(same) and all(c not in bad for c in same)
    return src not in bad


def producer(graph: ProvGraph, node_id: str) -> str | None:
    """The step that produced ``node_id`` (None for inputs)."""
    return next((e.src for e in graph.in_edges(node_id) if e.etype == "produce"), None)


def plan_repair(
    graph: ProvGraph,
    fault_nodes: list[str],
    *,
    run_tag: str = "run",
    support_check: bool = True,
    value_level: bool = True,
    unavailable: frozenset[str] | set[str] = frozenset(),
) -> RepairPlan:
    """The deterministic plan for repairing the history and the task trace ``run_tag``.
    ``value_level``: see :func:`check_support`; a task step is then replayed only when
    one of its outputs is unsupported or it consumes an unsupported claim (a record it
    was shown that lost support does not matter when what it took from it kept it).
    ``unavailable``: sessions that cannot be re-run; their unsupported records are
    quarantined instead."""
    missing = [f for f in fault_nodes if f not in graph.nodes]
    if missing:
        raise KeyError(f"diagnosed faults not in the provenance graph: {missing}")
    faults = set(fault_nodes)
    via = trace_affected(graph, faults)
    affected = set(via)
    unsupported, why = check_support(
        graph, faults, affected, enabled=support_check, value_level=value_level
    )
    fault_events = {graph.nodes[p].attrs.get("event") for f in faults if (p := producer(graph, f))}
    replay_events: dict[str, int] = {}
    quarantined = set()
    for nid in unsupported:
        step = producer(graph, nid)
        event = graph.nodes[step].attrs.get("event") if step else None
        history = step and graph.nodes[step].attrs.get("trace") == "history"
        if history and event not in fault_events and event not in unavailable:
            replay_events[event] = min(replay_events.get(event, 1 << 30), graph.nodes[step].order)
        elif graph.nodes[nid].kind == "memory":
            quarantined.add(nid)
    # What retrieval returns depends on every record it ranked: a retrieval-driven session
    # shown a record the repair removes or re-derives may be shown another one now, even
    # when what it cited kept its support. It is planned; the replay's value check re-runs
    # it only when what it would read changed.
    for nid in faults | unsupported:
        for e in graph.out_edges(nid):
            step = graph.nodes[e.dst]
            event = step.attrs.get("event")
            if (e.etype == "cite" and step.attrs.get("retrieval")
                    and event not in fault_events and event not in unavailable):  # fmt: skip
                replay_events[event] = min(replay_events.get(event, 1 << 30), step.order)
    answer = f"claim:{run_tag}:answer"
    relevant = graph.ancestors({answer}) if answer in graph.nodes else set()
    prefix = f"step:{run_tag}:"
    replay = set()
    for nid in affected:
        if graph.nodes[nid].kind == "step" and nid.startswith(prefix) and nid in relevant:
            outs = [e.dst for e in graph.out_edges(nid) if e.etype == "produce"]
            consumes = [e.src for e in graph.in_edges(nid) if e.etype == "cite"]
            if value_level:
                consumes = [n for n in consumes if graph.nodes[n].kind == "claim"]
            if any(n in unsupported for n in outs + consumes):
                replay.add(nid)
    ctx = (
        faults,
        affected,
        unsupported,
        quarantined,
        set(replay_events),
        via,
        why,
        replay,
        relevant,
        prefix,
    )
    actions = [NodeAction(n.node_id, n.kind, *_decide(graph, n, *ctx)) for n in graph.of_order()]
    claims = sorted(graph.nodes[n].attrs["key"] for n in unsupported
                    if graph.nodes[n].kind == "claim" and n.startswith(f"claim:{run_tag}:"))  # fmt: skip
    return RepairPlan(
        faults=sorted(faults), affected=sorted(affected), unsupported=sorted(unsupported),
        quarantined=sorted(quarantined), replay_events=sorted(replay_events, key=replay_events.get),
        replay_steps=[graph.nodes[s].attrs["sid"] for s in sorted(replay, key=lambda n: graph.nodes[n].order)],
        invalidated_claims=claims, actions=actions,
    )  # fmt: skip


def _decide(
    graph,
    node,
    faults,
    affected,
    unsupported,
    quarantined,
    events,
    via,
    why,
    replay,
    relevant,
    prefix,
):  # noqa: ANN001, PLR0911, PLR0913
    nid, kind = node.node_id, node.kind
    if nid in faults:
        return "delete", "diagnosed fault"
    if kind == "step" and node.attrs.get("event") in events:
        return "replay", "session re-executed on the repaired memory of its time"
    if nid not in affected:
        return "untouched", "not reachable from a diagnosed fault"
    reached = f"reached from {via[nid]}"
    if nid in quarantined:
        return "quarantine", f"{reached}; {why[nid]}"
    if nid in unsupported:
        step = producer(graph, nid)
        if step and graph.nodes[step].attrs.get("event") in events:
            return "rederive", f"{reached}; {why[nid]}; its session is re-run"
        return "invalidate", f"{reached}; {why[nid]}"
    if kind == "memory" and not node.attrs.get("active"):
        gone = faults | quarantined | unsupported
        sup = [e.src for e in graph.in_edges(nid) if e.etype == "supersede"]
        if sup and all(s in gone for s in sup):
            return "restore", f"{reached}; every record that overwrote it is removed"
        return "keep", f"{reached}; inactive, overwritten by a kept record"
    if kind in ("memory", "claim"):
        return "keep", f"{reached}; {why[nid]}"
    if nid.startswith(prefix):
        if nid in replay:
            return "replay", f"{reached}; answer-relevant and has an unsupported input or output"
        if nid not in relevant:
            return "skip", f"{reached}; cannot reach the final answer"
        return "reuse", f"{reached}; every input and output independently supported"
    return "none", f"{reached}; its outputs are handled above"


def prompt_level(graph: ProvGraph, only: set[str] | None = None) -> ProvGraph:
    """The graph an agent whose backbone never cites would record: every evidence edge
    from a record or an input is replaced by the whole prompt of the producing step
    (every record it showed and its input) as one jointly needed group. ``only``: rewire
    just these nodes' evidence (None: every node's)."""
    out = ProvGraph()
    for n in graph.of_order():
        out.add_node(n)
    rewired = set()
    for e in graph.edges:
        if (
            e.etype in EVIDENCE
            and graph.nodes[e.src].kind in ("memory", "input")
            and (only is None or e.dst in only)
        ):
            rewired.add(e.dst)
        else:
            out.add_edge(e)
    for dst in sorted(rewired, key=lambda n: graph.nodes[n].order):
        step = producer(graph, dst)
        srcs = [e.src for e in graph.in_edges(step) if e.etype in ("cite", "initiate")
                and graph.nodes[e.src].kind in ("memory", "input")] if step else []  # fmt: skip
        for src in dict.fromkeys(srcs):
            out.add_edge(Edge(src, dst, "support", "prompt"))
    return out


def suspect_citations(graph: ProvGraph, domain: str) -> set[str]:
    """Nodes whose cited evidence the prompt does not bear out: the newest record the
    producing step was shown that states the node's slot (the agent's rule: the most
    recent day wins, then the later line) is not among the records cited, or states
    another value than the node. A slip (an older record read, and cited) and a wrong
    citation both show up here; an exact citation never does."""
    out = set()
    for nid, node in graph.nodes.items():
        slot = slot_of(graph, nid) if node.kind in ("claim", "memory") else None
        cited = [e.src for e in graph.in_edges(nid) if e.etype in EVIDENCE
                 and e.group == e.src and graph.nodes[e.src].kind == "memory"]  # fmt: skip
        step = producer(graph, nid) if slot and cited else None
        if not step:
            continue
        value = node.attrs.get("value") if node.kind == "claim" else _value_in(node, slot, domain)
        best = None
        shown = [
            e.src
            for e in graph.in_edges(step)
            if e.etype == "cite" and graph.nodes[e.src].kind == "memory"
        ]
        for pos, src in enumerate(shown):
            text = graph.nodes[src].attrs.get("text", "")
            parsed = parse_record(text)
            for s, v in read_pairs(text, domain):
                if s == slot and (best is None or (parsed[0] if parsed else 0, pos) >= best[:2]):
                    best = (parsed[0] if parsed else 0, pos, v, src)
        if best is None or best[3] not in cited or best[2] != value:
            out.add(nid)
    return out


def _value_in(node: Any, slot: str, domain: str) -> str | None:
    return next((v for s, v in read_pairs(node.attrs.get("text", ""), domain) if s == slot), None)


def checked_citations(graph: ProvGraph, domain: str) -> ProvGraph:
    """``graph`` with the evidence of every :func:`suspect_citations` node replaced by its
    step's whole prompt (what an agent records for a line that cites nothing)."""
    return prompt_level(graph, only=suspect_citations(graph, domain))


def dependency_edges(graph: ProvGraph) -> set[tuple[str, str]]:
    """(source, node) pairs: which record or input each record or claim rests on."""
    return {(e.src, e.dst) for e in graph.edges
            if e.etype in EVIDENCE and graph.nodes[e.src].kind in ("memory", "input")}  # fmt: skip
