"""The repair track's agent: prompts, replies with citations, and the task workflow.

Every decision is a backbone call whose prompt lists memory records as ``[m1] text``.
The agent records provenance from what it did, never from a case's labels:

- ``cite``: every record the prompt contained (memory -> step);
- ``produce`` / ``update`` / ``supersede`` / ``delete``: what the step wrote or removed;
- evidence (``support`` / ``derive``): what the backbone cited after each reply line
  (``slot = value [m2, input]``), one alternative per cited source. When a line cites
  nothing (a backbone that does not cite), the whole prompt is its evidence, as one
  jointly needed group: the agent cannot tell which part was used.

The task is a fixed workflow; for a domain with tools T1..T3::

    args(T1) -> T1 -> args(T2) -> T2 -> args(T3) -> T3 -> answer -> memo

``args`` asks which values to use for the tool's slots, a tool step runs the tool on
those claims, ``answer`` asks for the directly answered slot and composes the answer,
``memo`` writes a ``last_choice`` note. Replay: given the old trace and a set of step
ids, the other steps reuse their recorded outputs; replayed ones read memory through
an overlay (the repaired state, not yet committed).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chronobench.protocols import ChatMessage, GenerationParams, GenerationRequest
from chronobench.tracks.repair.domains import DOMAINS, MISSING, record_text, run_tool
from chronobench.tracks.repair.lexicon import read_pairs
from chronobench.tracks.repair.provenance import Recorder, commit_with_provenance, load_graph

MEMO_ITEM = "memo:last_choice"
SYSTEM = (
    "You are a careful assistant with a long-term memory. Use the memory records shown; "
    "when records give a slot different values, the most recent day wins. After each line "
    "cite the records it rests on in brackets, e.g. 'budget = 600 EUR [m2]'; cite [input] "
    "for what the new message says. Reply only with the lines asked for."
)
CITES_RE = re.compile(r"\s*\[([^\[\]]*)\]\s*$")


def reply_text(reply: Any) -> str:
    """A backbone reply as text (a bare string, or a completion object with ``.text``)."""
    return reply if isinstance(reply, str) else str(getattr(reply, "text", reply))


def parse_reply(reply: str, keys: list[str] | tuple[str, ...]) -> dict[str, tuple[str, tuple]]:
    """``key = value [refs]`` lines -> ``{key: (value, refs)}``; unanswered keys are
    ``(unknown, ())``. Bullets, backticks and a trailing full stop are tolerated."""
    got: dict[str, tuple[str, tuple]] = {}
    for line in reply.splitlines():
        key, sep, rest = line.strip().strip("-* ").partition("=")
        key = key.strip().strip("`").lower().replace(" ", "_")
        if not sep or key not in keys or key in got:
            continue
        m = CITES_RE.search(rest)
        refs = ()
        if m:
            refs = tuple(r.strip().lower() for r in m.group(1).split(",") if r.strip())
            rest = rest[: m.start()]
        got[key] = (rest.strip().strip("`. ") or MISSING, refs)
    return {k: got.get(k, (MISSING, ())) for k in keys}


@dataclass(frozen=True)
class Shown:
    """One memory record in a prompt: its reference, provenance node, item and text."""

    ref: str
    node: str
    item: str
    text: str


@dataclass
class View:
    """What a step may read: item -> text, and the provenance node of each record."""

    items: dict[str, str]
    nodes: dict[tuple[str, str], str] = field(default_factory=dict)

    def shown(
        self, domain: str, slots: set[str], recent: int = 0, rec: Recorder | None = None
    ) -> list[Shown]:
        """Records mentioning any of ``slots`` (in store order), plus the ``recent`` newest
        others (a recency window), referenced m1, m2, ..."""
        picked = [i for i, t in self.items.items() if {s for s, _ in read_pairs(t, domain)} & slots]
        if recent:
            others = [i for i in self.items if i not in picked]
            picked += others[-recent:]
        order = {i: n for n, i in enumerate(self.items)}
        picked.sort(key=order.__getitem__)
        return [
            Shown(f"m{n}", self.node(i, rec), i, self.items[i])
            for n, i in enumerate(picked, start=1)
        ]

    def node(self, item: str, rec: Recorder | None) -> str:
        """The provenance node of ``item``'s record (one is made for a record written
        without provenance)."""
        key = (item, self.items[item])
        if key not in self.nodes:
            nid = "mem:anon:" + hashlib.sha256(f"{item}\n{key[1]}".encode()).hexdigest()[:10]
            if rec is not None and nid not in rec.known:
                rec.node(nid, "memory", item=item, text=key[1])
            self.nodes[key] = nid
        return self.nodes[key]


def make_request(
    task: str, shown: list[Shown], question: str, params: GenerationParams
) -> GenerationRequest:
    """A prompt: the system rules, the memory lines, the question."""
    lines = [f"[{s.ref}] {s.text}" for s in shown]
    body = "Memory:\n" + ("\n".join(lines) if lines else "(none)") + "\n\n" + question
    return GenerationRequest(
        messages=(ChatMessage("system", SYSTEM), ChatMessage("user", body)),
        params=params,
        task=task,
        context=tuple(f"[{s.ref}] {s.text}" for s in shown),
        question=question,
    )


def record_evidence(
    rec: Recorder, out: str, refs: tuple, shown: list[Shown], input_node: str | None, etype: str
) -> None:
    """Evidence edges into ``out``: each cited source is an alternative; with no valid
    citation, the prompt (every shown record and the input) is one joint group."""
    by_ref = {s.ref: s.node for s in shown}
    srcs = [by_ref[r] for r in refs if r in by_ref]
    if "input" in refs and input_node:
        srcs.append(input_node)
    if srcs:
        for src in dict.fromkeys(srcs):
            rec.edge(
                src, out, "support" if src.startswith(("input:", "claim:")) else etype, group=src
            )
        return
    for src in [s.node for s in shown] + ([input_node] if input_node else []):
        rec.edge(src, out, "support", group="prompt")


def view_of(mem: Any, app: str, user: str, overlay: Mapping[str, str | None] | None = None) -> View:
    """S(HEAD) with ``overlay`` applied (None removes an item), with the nodes of the
    stored provenance graph."""
    items = dict(mem.snapshot(app, user))
    for item, text in (overlay or {}).items():
        if text is None:
            items.pop(item, None)
        else:
            items[item] = text
    graph = load_graph(mem, app, user)
    nodes = {(n.attrs.get("item"), n.attrs.get("text")): n.node_id for n in graph.of_kind("memory")}
    return View(items, nodes)


@dataclass(frozen=True)
class StepSpec:
    """One step of the task workflow."""

    step_id: str
    role: str  # args | tool | answer | memo
    tool: str = ""
    slots: tuple[str, ...] = ()


@dataclass
class Trace:
    """What a task run did: per step its outputs, which steps ran, the claims, the answer."""

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


def slots_question(request: str, slots: tuple[str, ...] | list[str]) -> str:
    """The question of an args / answer step."""
    return (
        f"User request: {request}\nWhich values should be used? slots: {', '.join(slots)}. "
        "One line per slot, 'slot = value [refs]'; 'unknown' when memory has none."
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
            params = GenerationParams(max_new_tokens=160, seed=params)
        self.params = params
        self.app, self.user = case["app"], case["user"]
        self.domain = DOMAINS[case["domain"]]

    def ask(self, task: str, shown: list[Shown], question: str) -> str:
        """One backbone call; returns the reply text."""
        return reply_text(
            self.backbone.generate([make_request(task, shown, question, self.params)])[0]
        )

    def run(
        self,
        tag: str,
        *,
        old: Trace | None = None,
        replay: set[str] | None = None,
        overlay: Mapping[str, str | None] | None = None,
        repair_ops: list[dict[str, Any]] | None = None,
        labels: Mapping[str, Any] | None = None,
        nodes: Mapping[tuple[str, str], str] | None = None,
    ) -> Trace:
        """Run every step (``old`` None) or replay ``replay`` and reuse the rest of ``old``.

        ``repair_ops`` (with ``overlay``, the state they produce; ``nodes``, provenance
        nodes of records not yet stored) are committed together with the replayed
        steps' provenance when the memo step does not run."""
        if "input:task" not in self.rec.known:
            self.rec.node("input:task", "input", text=self.case["request"], trusted=True)
        view = view_of(self.mem, self.app, self.user, overlay)
        view.nodes.update(nodes or {})
        trace = Trace()
        committed = False
        for spec in workflow(self.case["domain"]):
            if old is not None and not self._must_run(spec, replay or set(), trace, old):
                prev = next(s for s in old.steps if s["step_id"] == spec.step_id)
                trace.steps.append({**prev, "executed": False})
                for key in prev["outputs"]:
                    trace.claims[key] = old.claims.get(key, prev["outputs"][key])
                    if key in old.claim_nodes:
                        trace.claim_nodes[key] = old.claim_nodes[key]
                if spec.role == "answer":
                    trace.answer = old.answer
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
                outputs = self._slots(step, spec, trace, tag, view)
            trace.steps.append(
                {"step_id": spec.step_id, "role": spec.role, "outputs": outputs, "executed": True}
            )
        ops = list(repair_ops or [])
        if (
            old is not None
            and not committed
            and trace.answer != old.answer
            and MEMO_ITEM in view.items
        ):
            # The failed task's note records an answer the replay changed: it goes too.
            ops = [o for o in ops if o["item_id"] != MEMO_ITEM]
            ops.append({"op": "delete", "item_id": MEMO_ITEM, "meta": {"action": "stale note"}})
        if not committed and (ops or self.rec.pending):
            ops = ops or [{"op": "update", "item_id": "repair:log", "text": f"repair {tag}"}]
            commit_with_provenance(self.mem, self.app, self.user, ops, self.rec, source="repair",
                                   reason=f"repair {tag}", labels=labels)  # fmt: skip
        return trace

    def _must_run(self, spec: StepSpec, replay: set[str], trace: Trace, old: Trace) -> bool:
        """A step runs when the plan replays it or an input it consumes changed value
        (the execution closure, decided as the replay goes); the memo only when planned."""
        if spec.step_id in replay:
            return True
        if spec.role == "tool":
            consumed = list(spec.slots)
        elif spec.role == "answer":
            consumed = [f"obs:{t.name}" for t in self.domain.tools]
        else:
            return False
        return any(trace.claims.get(k) != old.claims.get(k) for k in consumed)

    def _claim(self, trace: Trace, tag: str, step: str, key: str, value: str, **attrs: Any) -> str:
        node = self.rec.node(f"claim:{tag}:{key}", "claim", key=key, value=value, **attrs)
        self.rec.edge(step, node, "produce")
        trace.claims[key], trace.claim_nodes[key] = value, node
        return node

    def _slots(
        self, step: str, spec: StepSpec, trace: Trace, tag: str, view: View
    ) -> dict[str, str]:
        shown = view.shown(self.case["domain"], set(spec.slots), rec=self.rec)
        for s in shown:
            self.rec.edge(s.node, step, "cite")
        task = "repair_answer" if spec.role == "answer" else "repair_args"
        reply = self.ask(task, shown, slots_question(self.case["request"], spec.slots))
        trace.calls += 1
        values = {}
        for slot, (value, refs) in parse_reply(reply, spec.slots).items():
            values[slot] = value
            claim = self._claim(trace, tag, step, slot, value, default=value == MISSING)
            if value != MISSING:
                record_evidence(self.rec, claim, refs, shown, None, "support")
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
        answer = Shown("m1", trace.claim_nodes["answer"], "answer", trace.answer)
        reply = self.ask(
            "repair_memo", [answer], "Write one memory note, 'last_choice = <answer>'."
        )
        trace.calls += 1
        choice = parse_reply(reply, ["last_choice"])["last_choice"][0]
        text = record_text(int(self.case["task_day"]), [("last_choice", choice)], "agent note")
        node = self.rec.node(f"mem:{tag}:memo", "memory", item=MEMO_ITEM, text=text)
        self.rec.edge(step, node, "produce")
        self.rec.edge(trace.claim_nodes["answer"], node, "derive", group="derive")
        all_ops = [o for o in ops if o["item_id"] != MEMO_ITEM] + [
            {"op": "update", "item_id": MEMO_ITEM, "text": text}
        ]
        self.rec.set_attrs(step, ops=[[MEMO_ITEM, text]])
        commit_with_provenance(self.mem, self.app, self.user, all_ops, self.rec, source="agent",
                               reason=f"task {tag}", labels=labels)  # fmt: skip
        return {"memo": text}
