"""Repair baselines and the text-heuristic floors. None of them reads the dependency
graph's evidence edges; the full re-runs and the floors use the session log.

- ``delete_only``: delete the diagnosed faults, keep everything else, re-run the task.
- ``full_reset_replay``: ChronoMem back to its empty root, the whole history re-run
  without the sessions that wrote the diagnosed faults, then the task.
- ``rollback_replay``: ChronoMem truncated to the version before the first diagnosed
  fault, the sessions after it re-run without the faults, then the task.
- ``backbone_judged``: the backbone sees the diagnosed faults and judges every active
  record (one call each); dropped ones are deleted and the task re-run.
- ``text_floor`` (the outside review's heuristic, from its description): delete the
  diagnosed faults; delete newer records repeating, word for word, a (slot, value) pair
  a fault introduced; put back what the deleted records overwrote (version history);
  replay the task steps that read those slots.
- ``text_floor_replay``: the same, and also re-run every history session whose prompt
  showed a record naming one of those slots, and replay the task steps reading a slot
  whose record those re-runs changed (a stronger text rule than the review's).
- ``text_taint_replay``: the same with the slots propagated: a re-run session's
  written slots (read word for word) count as touched for the sessions after it.
- ``value_replay`` (the graph-free method): re-walk the log over the state rebuilt
  from the version history and re-run a session or task step only when a slot value it
  reads changed.
- ``memo_replay``: full reset and replay through the failed run's prompt memo (only
  byte-different prompts reach the backbone).
"""

from __future__ import annotations

import re
from typing import Any

from chronobench.tracks.repair.agent import (
    MEMO_ITEM,
    Shown,
    View,
    make_request,
    reply_text,
    workflow,
)
from chronobench.tracks.repair.context import (
    RepairContext,
    RepairOutcome,
    apply_timeline,
    delete_ops,
    fault_events,
    recorded_ops,
)
from chronobench.tracks.repair.domains import DOMAINS, parse_record
from chronobench.tracks.repair.graph import ProvGraph
from chronobench.tracks.repair.history import diff_ops, materialize, read_value, values_changed
from chronobench.tracks.repair.lexicon import literal_repeat, slot_phrase
from chronobench.tracks.repair.noise import MemoBackbone
from chronobench.tracks.repair.provenance import Recorder
from chronobench.tracks.repair.steps import HistoryAgent


def delete_only(ctx: RepairContext) -> RepairOutcome:
    """Remove the diagnosed faults, keep every other record, re-run the task."""
    ops, overlay = delete_ops(ctx, ctx.diagnosed)
    trace = ctx.runner.run("repair", overlay=overlay, repair_ops=ops, labels=ctx.labels)
    return RepairOutcome(trace)


def _rerun(
    ctx: RepairContext, version: int, after: int, reason: str, backbone: Any = None
) -> RepairOutcome:
    graph = ctx.graph()
    skip = fault_events(graph, ctx.diagnosed)
    recorded = recorded_ops(graph)  # before the rollback hides the later versions
    ctx.mem.rollback_to_version(*ctx.scope, int(version), reason=reason)
    rec = Recorder.resume(ctx.mem, *ctx.scope)
    backbone = backbone or ctx.backbone
    agent = CountingAgent(ctx.case, backbone, rec, ctx.runner.params)
    agent.unavailable, agent.recorded = set(ctx.unavailable), recorded
    materialize(ctx.mem, ctx.case, agent, skip=skip, after=after)
    runner = type(ctx.runner)(ctx.mem, ctx.case, backbone, rec, ctx.runner.params)
    trace = runner.run("repair", labels=ctx.labels)
    return RepairOutcome(trace, agent.steps, agent.calls, notes={"rolled_back_to": version})


class CountingAgent(HistoryAgent):
    """A history agent that counts the steps and backbone calls it runs."""

    steps = calls = 0

    def execute(self, ev: dict[str, Any], view: Any, tag: str = "") -> Any:
        res = super().execute(ev, view, tag)
        self.steps += res.steps
        self.calls += res.calls
        return res


def full_reset(ctx: RepairContext) -> RepairOutcome:
    """Empty root, whole history re-run without the faults' sessions, then the task."""
    return _rerun(ctx, 0, -1, "repair: full reset")


def version_rollback(ctx: RepairContext) -> RepairOutcome:
    """Truncate to the version before the first fault, re-run what followed without the
    faults' sessions, then the task."""
    graph = ctx.graph()
    if not ctx.diagnosed:  # nothing to roll back past
        return RepairOutcome(ctx.runner.run("repair", labels=ctx.labels))
    first = min(graph.nodes[n].attrs["version"] for n in ctx.diagnosed)
    parent = next(v.parent for v in ctx.mem.versions(*ctx.scope) if v.version_id == first)
    events = fault_events(graph, ctx.diagnosed)
    index = min(i for i, e in enumerate(ctx.case["events"]) if e["event"] in events)
    return _rerun(ctx, int(parent or 0), index - 1, "repair: rollback")


def memo_replay(ctx: RepairContext) -> RepairOutcome:
    """Full reset and whole-history replay through the failed run's prompt memo: a call
    whose prompt is byte-identical to one the failed run made reuses that reply (a
    deployed agent's call cache); only the others reach the backbone."""
    memo = MemoBackbone(ctx.backbone, ctx.memo)
    out = _rerun(ctx, 0, -1, "repair: memoised full replay", backbone=memo)
    out.memo_hits = memo.hits
    out.notes["memo_hits"] = memo.hits
    return out


class LogWalk:
    """The failed history from the first diagnosed session on, as the graph-free
    replays re-walk it: the state just before that session (``view``, to be rebuilt),
    and each undiagnosed session after it with the memory before and after its version
    (diagnosed sessions are skipped, their writes never reach ``view``)."""

    def __init__(self, ctx: RepairContext) -> None:
        app, user = ctx.scope
        self.domain = ctx.case["domain"]
        bad = {n.split(":")[1] for n in ctx.diagnosed if n.count(":") >= 2}
        events = ctx.case["events"]
        versions = {v.labels.get("event"): v for v in ctx.mem.versions(app, user)}
        starts = [i for i, e in enumerate(events) if e["event"] in bad and e["event"] in versions]
        self.head = ctx.mem.snapshot(app, user)
        self.sessions: list[tuple[dict[str, Any], dict[str, str], dict[str, str]]] = []
        self.started = bool(starts)
        self.view = View({})
        if not starts:
            return
        first = versions[events[starts[0]]["event"]]
        before = ctx.mem.snapshot(app, user, int(first.parent)) if first.parent else {}
        self.view = View(dict(before))
        for ev in events[starts[0] :]:
            v = versions.get(ev["event"])
            after = ctx.mem.snapshot(app, user, int(v.version_id)) if v else before
            if ev["event"] not in bad:
                self.sessions.append((ev, before, after))
            before = after

    def finish(
        self, ctx: RepairContext, steps: set[str], agent: Any, notes: dict[str, Any]
    ) -> RepairOutcome:
        """Write the rebuilt state over HEAD (the prompt memo kept) and replay ``steps``."""
        if MEMO_ITEM in self.head:
            self.view.items[MEMO_ITEM] = self.head[MEMO_ITEM]
        ops, overlay = diff_ops(self.head, self.view.items, ctx.method)
        kw = {"overlay": overlay, "repair_ops": ops, "labels": ctx.labels, "nodes": self.view.nodes}
        trace = ctx.runner.run("repair", old=ctx.old, replay=steps, **kw)
        return RepairOutcome(trace, agent.steps, agent.calls, notes=notes)


def nothing_to_repair(ctx: RepairContext) -> RepairOutcome:
    """The outcome when no diagnosed session left a version: the failed run as it was."""
    return RepairOutcome(ctx.runner.run("repair", old=ctx.old, replay=set(), labels=ctx.labels))


def value_replay(ctx: RepairContext) -> RepairOutcome:
    """Graph-free repair: re-walk the session log from the first diagnosed session over
    the state rebuilt from ChronoMem's version history; skip the diagnosed sessions;
    re-run a session only when a slot value it reads differs from what it read in the
    failed history (else re-apply its recorded ops, the diff of its version); then replay
    the task steps whose slots' values changed. Reads neither provenance edges nor
    citations: only the log, the versions and the agent's newest-record rule."""
    walk = LogWalk(ctx)
    if not walk.started:
        return nothing_to_repair(ctx)
    domain, view = walk.domain, walk.view
    agent = ctx.agent(cls=CountingAgent)
    rerun: list[str] = []
    for ev, before, after in walk.sessions:
        changed = values_changed(ev, view.items, before, domain)
        if changed and ev["event"] not in ctx.unavailable:
            agent.execute(ev, view, "repair")
            rerun.append(ev["event"])
        elif not changed:  # its recorded writes, in order (newest last)
            for item in [i for i in before if i not in after]:
                view.items.pop(item, None)
            for item, text in after.items():
                if before.get(item) != text:
                    view.items.pop(item, None)
                    view.items[item] = text
        # changed but unavailable: its writes are not trusted and cannot be redone
    failed = {k: t for k, t in walk.head.items() if k != MEMO_ITEM}
    steps = {spec.step_id for spec in workflow(domain) if spec.role in ("args", "answer")
             and any(read_value(view.items, s, domain) != read_value(failed, s, domain) for s in spec.slots)}  # fmt: skip
    return walk.finish(ctx, steps, agent, {"rerun": rerun})


def backbone_judged(ctx: RepairContext) -> RepairOutcome:
    """The backbone judges every active record against the diagnosed faults."""
    graph = ctx.graph()
    faults = [graph.nodes[n].attrs["text"] for n in ctx.diagnosed]
    head = ctx.mem.snapshot(*ctx.scope)
    slots = ", ".join(DOMAINS[ctx.case["domain"]].slots)
    question = (
        "Diagnosed faulty memories are marked FAULT. Should the CANDIDATE memory be dropped "
        f"because it is a fault or carries what one says? slots: {slots}. Reply drop or keep."
    )
    items = sorted(head)
    reqs = []
    for item in items:
        lines = [f"FAULT: {f}" for f in faults] + [
            t for i, t in head.items() if i != item and t not in faults
        ]
        lines.append(f"CANDIDATE: {head[item]}")
        shown = [Shown(f"m{n}", "", "", t) for n, t in enumerate(lines, start=1)]
        reqs.append(make_request("repair_judge", shown, question, ctx.runner.params))
    verdicts = [reply_text(r) for r in ctx.backbone.generate(reqs)] if reqs else []
    dropped = [i for i, v in zip(items, verdicts, strict=True) if "drop" in v.lower()]
    ops = [{"op": "delete", "item_id": i, "meta": {"action": "judged"}} for i in dropped]
    trace = ctx.runner.run(
        "repair", overlay=dict.fromkeys(dropped), repair_ops=ops, labels=ctx.labels
    )
    return RepairOutcome(trace, extra_calls=len(reqs), notes={"dropped": dropped})


# -- the text-heuristic floors ----------------------------------------------------------


def introduced_pairs(ctx: RepairContext, graph: ProvGraph) -> dict[str, set[tuple[str, str]]]:
    """fault -> the (slot, value) pairs of its text that differ from what memory said of
    the slot just before the fault's commit (read word for word, from the version history)."""
    out = {}
    for f in ctx.diagnosed:
        node = graph.nodes[f]
        version = node.attrs["version"]
        parent = next(v.parent for v in ctx.mem.versions(*ctx.scope) if v.version_id == version)
        before = ctx.mem.snapshot(*ctx.scope, int(parent)) if parent else {}
        prior: dict[str, tuple[int, str]] = {}
        for text in before.values():
            parsed = parse_record(text)
            for slot, value in parsed[1] if parsed else []:
                if slot not in prior or parsed[0] >= prior[slot][0]:
                    prior[slot] = (parsed[0], value)
        parsed = parse_record(node.attrs["text"])
        out[f] = {
            (s, v) for s, v in (parsed[1] if parsed else []) if prior.get(s, (0, None))[1] != v
        }
    return out


def _floor_deletions(ctx: RepairContext, graph: ProvGraph) -> tuple[set[str], set[str]]:
    """(records to delete, slots the faults touched)."""
    pairs = introduced_pairs(ctx, graph)
    drop, slots = set(ctx.diagnosed), {s for ps in pairs.values() for s, _ in ps}
    for f, ps in pairs.items():
        order = graph.nodes[f].order
        for m in graph.of_kind("memory"):
            if (
                m.order > order
                and m.attrs.get("active")
                and any(literal_repeat(m.attrs["text"], s, v) for s, v in ps)
            ):
                drop.add(m.node_id)
    return drop, slots


def _task_steps_reading(ctx: RepairContext, slots: set[str]) -> list[str]:
    d = DOMAINS[ctx.case["domain"]]
    steps = []
    for i, tool in enumerate(d.tools, start=1):
        if set(tool.slots) & slots:
            steps += [f"args{i}", f"tool{i}"]
    return [*steps, "answer"]


def _names(text: str, slot: str) -> bool:
    parsed = parse_record(text)
    if parsed and any(s == slot for s, _ in parsed[1]):
        return True
    return any(
        re.search(rf"(?<![\w.]){re.escape(n)}(?![\w.])", text, re.IGNORECASE)
        for n in (slot, slot_phrase(slot))
    )


def _sessions_reading(
    ctx: RepairContext, graph: ProvGraph, slots: set[str], transitive: bool = False
) -> set[str]:
    """History sessions whose prompt showed a record naming one of ``slots``, or whose
    request named one (read from the logged prompts' text). ``transitive``: the slots a
    re-run session writes (read word for word) join ``slots`` from then on."""
    events = {e["event"]: e for e in ctx.case["events"]}
    bad = fault_events(graph, ctx.diagnosed)
    first = min((graph.nodes[f].order for f in ctx.diagnosed), default=0)
    tainted, out = set(slots), set()
    for step in graph.of_kind("step"):
        eid = step.attrs.get("event")
        if step.attrs.get("trace") != "history" or step.order < first or eid in bad:
            continue
        shown = [graph.nodes[e.src].attrs.get("text", "") for e in graph.in_edges(step.node_id)
                 if e.etype == "cite" and graph.nodes[e.src].kind == "memory"]  # fmt: skip
        asked = [
            events[eid].get("input") or "",
            *events[eid].get("slots", []),
            events[eid].get("slot", ""),
        ]
        if eid in out or any(_names(t, s) for s in tainted for t in shown + asked if t):
            out.add(eid)
            if transitive:
                written = [t for _, t in step.attrs.get("ops", []) if t]
                tainted |= {s for t in written for s, _ in (parse_record(t) or (0, []))[1]}
    return out


def text_floor(
    ctx: RepairContext, *, history: bool = False, transitive: bool = False
) -> RepairOutcome:
    """The text heuristic (see module doc); ``history`` also re-runs sessions."""
    graph = ctx.graph()
    drop, slots = _floor_deletions(ctx, graph)
    replay = _sessions_reading(ctx, graph, slots, transitive) if history else set()

    def steps(overlay: dict) -> list[str]:
        if not history:
            return _task_steps_reading(ctx, slots)
        # Slots whose records the re-run sessions changed, read word for word.
        changed = {s for t in overlay.values() if t for s, _ in (parse_record(t) or (0, []))[1]}
        return _task_steps_reading(ctx, slots | changed)

    trace, rp = apply_timeline(ctx, drop, replay, steps)
    notes = {"deleted": sorted(drop), "rerun": rp.events}
    return RepairOutcome(trace, rp.steps, rp.calls, notes=notes)


BASELINES = {
    "delete_only": delete_only,
    "full_reset_replay": full_reset,
    "rollback_replay": version_rollback,
    "backbone_judged": backbone_judged,
    "text_floor": text_floor,
    "text_floor_replay": lambda ctx: text_floor(ctx, history=True),
    "text_taint_replay": lambda ctx: text_floor(ctx, history=True, transitive=True),
    "value_replay": value_replay,
    "memo_replay": memo_replay,
}
