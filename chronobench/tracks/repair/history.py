"""A case's history, run by the agent into a ChronoMem scope, and re-run after a repair.

:func:`materialize` executes the sessions in order (one ChronoMem commit each, with the
provenance the agent recorded). :func:`replay_timeline` is the repair's executor: it
walks the stored writing steps in time order over an in-memory state, drops the ops of
removed records, re-executes the chosen sessions on the state as it stands at their
time (so a re-run note sees the repaired past, not the present), and reuses every
other step's recorded ops. Dropping a record that overwrote another brings the older
text back, because the overwrite is never applied.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chronobench.tracks.repair.agent import View, view_of
from chronobench.tracks.repair.domains import DOMAINS
from chronobench.tracks.repair.graph import ProvGraph
from chronobench.tracks.repair.lexicon import find_pairs
from chronobench.tracks.repair.policy import latest
from chronobench.tracks.repair.provenance import commit_with_provenance
from chronobench.tracks.repair.retrieval import retrieve, retrieves
from chronobench.tracks.repair.steps import HistoryAgent


def materialize(
    mem: Any,
    case: dict[str, Any],
    agent: HistoryAgent,
    *,
    skip: Iterable[str] = (),
    after: int = -1,
) -> dict[str, int]:
    """Run the sessions of ``case`` (except ``skip``; only those with index > ``after``)
    into ``mem``, one commit per session that wrote something; returns ``{event: version}``."""
    app, user = case["app"], case["user"]
    skipped = set(skip)
    view = view_of(mem, app, user)
    written: dict[str, int] = {}
    for n, ev in enumerate(case["events"]):
        if n <= after or ev["event"] in skipped:
            continue
        res = agent.execute(ev, view)
        if not res.ops:
            continue  # its provenance rides along with the next commit
        ops = [{"op": "delete", "item_id": i} if t is None else {"op": "update", "item_id": i, "text": t}
               for i, t in res.ops]  # fmt: skip
        written[ev["event"]] = commit_with_provenance(
            mem, app, user, ops, agent.rec, source=ev["kind"], reason=f"history {ev['event']}",
            labels={"event": ev["event"]},
        )  # fmt: skip
    return written


def history_steps(graph: ProvGraph) -> list[Any]:
    """Step nodes of the history sessions, in time order."""
    return [n for n in graph.of_kind("step") if n.attrs.get("trace") == "history"]


@dataclass
class Replayed:
    """The repaired state and what producing it cost."""

    items: dict[str, str]
    nodes: dict[tuple[str, str], str] = field(default_factory=dict)
    steps: int = 0
    calls: int = 0
    events: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # planned sessions the value check kept


def read_value(items: Mapping[str, str], slot: str, domain: str) -> str:
    """What the agent's reading rule (the newest record stating the slot wins; the system
    prompt says so) takes for ``slot`` from ``items``."""
    return latest(list(enumerate(items.values())), slot, domain)[0]


def session_reads(ev: dict[str, Any], domain: str) -> set[str]:
    """The slots a session reads from memory, from its log entry: a message's named
    slots, a note's slot, a merge's slots, a lookup's argument (system writes: none)."""
    kind = ev["kind"]
    if kind in ("chat", "paste"):
        return {s for s, _ in find_pairs(ev.get("input") or "", domain)}
    if kind == "note":
        return {ev["slot"]}
    if kind == "consolidate":
        return set(ev["slots"])
    if kind == "lookup":
        derivations = DOMAINS[domain].derivations()
        return {next(d.source for d in derivations if d.name == ev["derivation"])}
    return set()


def agent_reads(ev: dict[str, Any], items: Mapping[str, str], domain: str) -> dict[str, str]:
    """slot -> the value session ``ev`` reads from ``items`` when it runs: the newest
    record stating the slot, among what retrieval returns for its logged query when it
    issued one (:mod:`~chronobench.tracks.repair.retrieval`)."""
    if retrieves(ev):
        items = {i: items[i] for i in retrieve(items, ev["query"])}
    return {s: read_value(items, s, domain) for s in session_reads(ev, domain)}


def reads_changed(
    ev: dict[str, Any], new: Mapping[str, str], old: Mapping[str, str], domain: str
) -> bool:
    """Whether re-running the session on ``new`` would read another value than it read
    on ``old`` (the replay's value check: the agent's own reading, retrieval included)."""
    return agent_reads(ev, new, domain) != agent_reads(ev, old, domain)


def values_changed(
    ev: dict[str, Any], new: Mapping[str, str], old: Mapping[str, str], domain: str
) -> bool:
    """Whether a slot the session reads has another value in ``new`` than in ``old``."""
    return any(
        read_value(new, s, domain) != read_value(old, s, domain) for s in session_reads(ev, domain)
    )


def replay_timeline(
    graph: ProvGraph,
    case: dict[str, Any],
    agent: HistoryAgent,
    *,
    drop: set[str],
    replay: set[str],
    tag: str = "repair",
    value_check: bool = False,
) -> Replayed:
    """The state after re-walking every writing step (history sessions and the task memo)
    with the records in ``drop`` removed and the sessions in ``replay`` re-executed.
    ``value_check``: a planned session re-runs only when a slot value it reads differs
    from what it read in the failed history (:func:`reads_changed`); otherwise its
    recorded ops are reused."""
    events = {e["event"]: e for e in case["events"]}
    out = Replayed({})
    view = View(out.items, out.nodes)
    orig: dict[str, str] = {}  # the failed history's state at the same point
    done: set[str] = set()
    for step in (
        n for n in graph.of_kind("step") if "ops" in n.attrs or n.attrs.get("event") in replay
    ):
        eid = step.attrs.get("event")
        fresh = eid in replay and eid not in done and eid not in out.kept
        if (
            fresh
            and value_check
            and not reads_changed(events[eid], view.items, orig, case["domain"])
        ):
            out.kept.append(eid)  # the same values: its recorded ops stand
        if eid in replay and eid not in out.kept:
            if eid not in done:
                done.add(eid)
                res = agent.execute(events[eid], view, tag)
                out.steps += res.steps
                out.calls += res.calls
                out.events.append(eid)
        elif "ops" in step.attrs:
            _apply_recorded(graph, step, view, drop)
        for item, text in step.attrs.get("ops", []):
            orig.pop(item, None)
            if text is not None:
                orig[item] = text
    return out


def _apply_recorded(graph: ProvGraph, step: Any, view: View, drop: set[str]) -> None:
    """A step's recorded ops on ``view``, less the records in ``drop``."""
    made = {(graph.nodes[e.dst].attrs["item"], graph.nodes[e.dst].attrs["text"]): e.dst
            for e in graph.out_edges(step.node_id) if e.etype == "produce" and graph.nodes[e.dst].kind == "memory"}  # fmt: skip
    lost = any(node in drop for node in made.values())
    for item, text in step.attrs["ops"]:
        if text is None:
            if not lost:  # a merge whose summary is dropped leaves its originals
                view.items.pop(item, None)
            continue
        node = made.get((item, text))
        if node in drop:
            continue
        view.items.pop(item, None)
        view.items[item] = text
        if node:
            view.nodes[(item, text)] = node


def diff_ops(
    head: dict[str, str], items: dict[str, str], action: str
) -> tuple[list[dict[str, Any]], dict]:
    """Ops (and the overlay they produce) turning S(HEAD) into ``items``."""
    ops, overlay = [], {}
    for item in head:
        if item not in items:
            ops.append({"op": "delete", "item_id": item, "meta": {"action": action}})
            overlay[item] = None
    for item, text in items.items():
        if head.get(item) != text:
            ops.append({"op": "update", "item_id": item, "text": text, "meta": {"action": action}})
            overlay[item] = text
    return ops, overlay
