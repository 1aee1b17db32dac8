"""The repair track's agent: a fixed workflow whose every decision is a backbone call.

For a domain with tools T1..T3 the task trace is::

    args(T1) -> T1 -> args(T2) -> T2 -> args(T3) -> T3 -> answer -> memo

``args`` asks the backbone which values to use for the tool's slots, showing it the
memory records that mention them; a tool step runs the deterministic tool; ``answer``
asks for the directly answered slot and composes the final answer from the
observations; ``memo`` asks the backbone for a note and commits it to memory. Every
step is recorded in the provenance graph (initiate, cite, produce, support, derive).

Replay: given the old trace and a set of step ids, the steps outside the set reuse
their recorded outputs (and claim nodes); the others run again, reading memory through
an optional overlay (the planned repaired state, not yet committed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chronobench.protocols import ChatMessage, GenerationParams, GenerationRequest, as_completion
from chronobench.repair.domains import DOMAINS, parse_record, record_text, run_tool
from chronobench.repair.policy import parse_slot_lines
from chronobench.repair.provenance import Recorder, commit_with_provenance, load_graph

MEMO_ITEM = "memo:last_choice"
_SYSTEM = (
    "You are a careful assistant. Use the memory records shown; when several records "
    "give a slot different values, the most recent day wins. Reply only with the lines asked for."
)


@dataclass(frozen=True)
class StepSpec:
    """One step of the workflow."""

    step_id: str
    role: str  # args | tool | answer | memo
    tool: str = ""
    slots: tuple[str, ...] = ()


@dataclass
class Trace:
    """What a run did: per step its outputs, which steps ran, the claims, the answer."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    claims: dict[str, str] = field(default_factory=dict)
    claim_nodes: dict[str, str] = field(default_factory=dict)
    answer: str = ""
    calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "steps": self.steps,
            "claims": self.claims,
            "answer": self.answer,
            "calls": self.calls,
        }


def workflow(domain: str) -> list[StepSpec]:
    """The task steps of ``domain`` in trace order."""
    d = DOMAINS[domain]
    steps: list[StepSpec] = []
    for i, tool in enumerate(d.tools, start=1):
        steps.append(StepSpec(f"args{i}", "args", tool.name, tool.slots))
        steps.append(StepSpec(f"tool{i}", "tool", tool.name, tool.slots))
    steps.append(StepSpec("answer", "answer", "", (d.direct,)))
    steps.append(StepSpec("memo", "memo"))
    return steps


def memory_view(
    mem: Any, app: str, user: str, overlay: Mapping[str, str | None] | None
) -> dict[str, str]:
    """S(HEAD) with ``overlay`` applied (item -> text, None removes the item)."""
    snap = dict(mem.snapshot(app, user))
    for item, text in (overlay or {}).items():
        if text is None:
            snap.pop(item, None)
        else:
            snap[item] = text
    return snap


def _request(
    task: str, context: list[str], question: str, params: GenerationParams
) -> GenerationRequest:
    shown = "\n".join(context) if context else "(none)"
    return GenerationRequest(
        messages=(
            ChatMessage("system", _SYSTEM),
            ChatMessage("user", f"Memory:\n{shown}\n\n{question}"),
        ),
        params=params,
        task=task,
        context=tuple(context),
        question=question,
    )


class TaskRunner:
    """Runs (or replays) one case's task on a store through a backbone."""

    def __init__(
        self,
        mem: Any,
        case: dict[str, Any],
        backbone: Any,
        recorder: Recorder,
        params: GenerationParams | int = 0,
    ):
        self.mem, self.case, self.backbone, self.rec = mem, case, backbone, recorder
        # An int is a seed with the track's default budget (replies are a few short lines).
        if isinstance(params, int):
            params = GenerationParams(max_new_tokens=96, seed=params)
        self.params = params
        self.app, self.user = case["app"], case["user"]
        self.domain = DOMAINS[case["domain"]]

    def _mem_nodes(self) -> dict[tuple[str, str], str]:
        graph = load_graph(self.mem, self.app, self.user)
        nodes = {
            (n.attrs.get("item"), n.attrs.get("text")): n.node_id for n in graph.of_kind("memory")
        }
        return nodes

    def _node_for(self, nodes: dict[tuple[str, str], str], item: str, text: str) -> str:
        if (item, text) not in nodes:  # a record written without provenance: give it a node
            nid = "mem:anon:" + hashlib.sha256(f"{item}\n{text}".encode()).hexdigest()[:10]
            nodes[(item, text)] = (
                self.rec.node(nid, "memory", item=item, text=text)
                if nid not in self.rec.known
                else nid
            )
        return nodes[(item, text)]

    def run(
        self,
        tag: str,
        *,
        old: Trace | None = None,
        replay: set[str] | None = None,
        overlay: Mapping[str, str | None] | None = None,
        repair_ops: list[dict[str, Any]] | None = None,
        labels: Mapping[str, Any] | None = None,
    ) -> Trace:
        """Run every step (``old`` None) or replay ``replay`` and reuse the rest of ``old``.

        ``repair_ops`` (with ``overlay``, the state they produce) are committed together
        with the replayed steps' provenance when the memo step does not run."""
        if "input:task" not in self.rec.known:
            self.rec.node("input:task", "input", text=self.case["request"], trusted=True)
        view = memory_view(self.mem, self.app, self.user, overlay)
        nodes = self._mem_nodes()
        trace = Trace()
        committed = False
        for spec in workflow(self.case["domain"]):
            if old is not None and spec.step_id not in (replay or set()):
                prev = next(s for s in old.steps if s["step_id"] == spec.step_id)
                trace.steps.append({**prev, "executed": False})
                for key in prev["outputs"]:
                    trace.claims[key] = old.claims.get(key, prev["outputs"][key])
                    if key in old.claim_nodes:
                        trace.claim_nodes[key] = old.claim_nodes[key]
                continue
            step = self.rec.node(f"step:{tag}:{spec.step_id}", "step", trace="task", role=spec.role,
                                 call="tool" if spec.role == "tool" else "backbone", sid=spec.step_id)  # fmt: skip
            self.rec.edge("input:task", step, "initiate")
            if spec.role == "memo":
                committed = True
                outputs = self._memo(step, trace, tag, repair_ops or [], labels)
            elif spec.role == "tool":
                outputs = self._tool(step, spec, trace, tag)
            else:
                outputs = self._slots(step, spec, trace, tag, view, nodes)
            trace.steps.append(
                {"step_id": spec.step_id, "role": spec.role, "outputs": outputs, "executed": True}
            )
        if not committed and (repair_ops or self.rec.pending):
            ops = repair_ops or [{"op": "update", "item_id": "repair:log", "text": f"repair {tag}"}]
            commit_with_provenance(self.mem, self.app, self.user, ops, self.rec, source="repair",
                                   reason=f"repair {tag}", labels=labels)  # fmt: skip
        return trace

    def _claim(self, trace: Trace, tag: str, step: str, key: str, value: str, **attrs: Any) -> str:
        node = self.rec.node(f"claim:{tag}:{key}", "claim", key=key, value=value, **attrs)
        self.rec.edge(step, node, "produce")
        trace.claims[key], trace.claim_nodes[key] = value, node
        return node

    def _slots(
        self, step: str, spec: StepSpec, trace: Trace, tag: str, view: dict[str, str], nodes: dict
    ) -> dict[str, str]:
        shown = []
        for item, text in view.items():
            parsed = parse_record(text)
            if parsed and any(s in spec.slots for s, _ in parsed[1]):
                shown.append((item, text, parsed[1]))
        for item, text, _ in shown:
            self.rec.edge(self._node_for(nodes, item, text), step, "cite")
        question = (
            f"User request: {self.case['request']}\nWhich values should be used? slots: "
            f"{', '.join(spec.slots)}. One line per slot, 'slot = value'; 'unknown' when memory has none."
        )
        task = "repair_answer" if spec.role == "answer" else "repair_args"
        reply = as_completion(
            self.backbone.generate(
                [_request(task, [t for _, t, _ in shown], question, self.params)]
            )[0]
        ).text
        trace.calls += 1
        values = parse_slot_lines(reply, spec.slots)
        for slot, value in values.items():
            agree = [(i, t) for i, t, pairs in shown if (slot, value) in pairs]
            claim = self._claim(trace, tag, step, slot, value, default=not agree)
            for item, text in agree:
                mnode = self._node_for(nodes, item, text)
                self.rec.edge(mnode, claim, "support", group=mnode)  # any one record suffices
        if spec.role != "answer":
            return values
        obs = [trace.claims[f"obs:{t.name}"] for t in self.domain.tools]
        answer = " | ".join([*obs, f"{self.domain.direct}: {values[self.domain.direct]}"])
        node = self._claim(trace, tag, step, "answer", answer)
        for key in [f"obs:{t.name}" for t in self.domain.tools] + [self.domain.direct]:
            self.rec.edge(trace.claim_nodes[key], step, "cite")
            self.rec.edge(trace.claim_nodes[key], node, "support", group="answer")
        trace.answer = answer
        return {**values, "answer": answer}

    def _tool(self, step: str, spec: StepSpec, trace: Trace, tag: str) -> dict[str, str]:
        tool = next(t for t in self.domain.tools if t.name == spec.tool)
        args = {**self.case["params"], **{s: trace.claims[s] for s in tool.slots}}
        for s in tool.slots:
            self.rec.edge(trace.claim_nodes[s], step, "cite")
        key = f"obs:{tool.name}"
        node = self._claim(trace, tag, step, key, run_tool(tool, args))
        for s in tool.slots:
            self.rec.edge(trace.claim_nodes[s], node, "support", group="args")
        return {key: trace.claims[key]}

    def _memo(
        self,
        step: str,
        trace: Trace,
        tag: str,
        ops: list[dict[str, Any]],
        labels: Mapping[str, Any] | None,
    ) -> dict[str, str]:
        self.rec.edge(trace.claim_nodes["answer"], step, "cite")
        req = _request(
            "repair_memo",
            [trace.answer],
            "Write one memory note, 'last_choice = <answer>'.",
            self.params,
        )
        reply = as_completion(self.backbone.generate([req])[0]).text
        trace.calls += 1
        choice = parse_slot_lines(reply, ["last_choice"])["last_choice"]
        text = record_text(int(self.case["task_day"]), [("last_choice", choice)], "agent note")
        node = self.rec.node(f"mem:{tag}:memo", "memory", item=MEMO_ITEM, text=text)
        self.rec.edge(step, node, "produce")
        self.rec.edge(trace.claim_nodes["answer"], node, "derive", group="derive")
        all_ops = [o for o in ops if o["item_id"] != MEMO_ITEM] + [
            {"op": "update", "item_id": MEMO_ITEM, "text": text}
        ]
        commit_with_provenance(self.mem, self.app, self.user, all_ops, self.rec, source="agent",
                               reason=f"task {tag}", labels=labels)  # fmt: skip
        return {"memo": text}
