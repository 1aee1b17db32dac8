"""Turning a case's history into a ChronoMem scope with provenance, one commit per event.

A case's ``events`` are the sessions before the task: who said what (an input node,
trusted or not), which records the agent had in context (cite edges), which records it
wrote (produce edges; an item that already held a record gets an update from the step
and a supersede edge from the new record to the old one), which records a new one was
derived from or consolidates, and which records the input stated outright (support).
``clean=True`` builds the fault-free history: events that exist only because of a fault
are skipped and cites of faults dropped (the gold run).
"""

from __future__ import annotations

from typing import Any

from chronobench.repair.provenance import Recorder, commit_with_provenance


def materialize(
    mem: Any, case: dict[str, Any], recorder: Recorder, *, clean: bool = False
) -> dict[str, int]:
    """Commit the case's history into ``mem``; returns ``{record_id: version_id}``."""
    app, user, records = case["app"], case["user"], case["records"]
    faulty = {f["record"] for f in case["faults"]}
    holder: dict[str, str] = {}  # item -> record id holding it now
    written: dict[str, int] = {}
    for ev in case["events"]:
        if clean and ev.get("fault_only"):
            continue
        eid = ev["event"]
        if ev.get("input"):
            recorder.node(f"input:{eid}", "input", text=ev["input"], trusted=bool(ev["trusted"]))
        step = recorder.node(
            f"step:{eid}", "step", trace="history", call="backbone", role=ev["kind"]
        )
        if ev.get("input"):
            recorder.edge(f"input:{eid}", step, "initiate")
        for rid in ev.get("cites", []):
            if f"mem:{rid}" in recorder.known and not (clean and rid in faulty):
                recorder.edge(f"mem:{rid}", step, "cite")
        ops = []
        for rid in ev["writes"]:
            rec = records[rid]
            node = recorder.node(f"mem:{rid}", "memory", item=rec["item"], text=rec["text"])
            recorder.edge(step, node, "produce")
            old = holder.get(rec["item"])
            if old is not None:
                recorder.edge(step, f"mem:{old}", "update")
                recorder.edge(node, f"mem:{old}", "supersede")
            if rid in ev.get("stated", []) and ev.get("input"):
                recorder.edge(f"input:{eid}", node, "support", group="stated")
            ops.append(
                {"op": "update" if old else "add", "item_id": rec["item"], "text": rec["text"]}
            )
            holder[rec["item"]] = rid
        for etype in ("derive", "consolidate"):
            for src, dst in ev.get(etype, []):
                if f"mem:{src}" in recorder.known:
                    recorder.edge(f"mem:{src}", f"mem:{dst}", etype, group=etype)
        vid = commit_with_provenance(
            mem, app, user, ops, recorder, source=ev["kind"], reason=f"history {eid}",
            labels={"event": eid},
        )  # fmt: skip
        written.update({rid: vid for rid in ev["writes"]})
    return written
