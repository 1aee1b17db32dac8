"""History sessions executed by the agent, one step (or two) per session.

A case's history is a log of sessions, each an input the agent handled:

- ``chat`` / ``paste``: a message (typed by the user, or pasted from elsewhere; a
  message from another customer's session that reached this thread is a ``chat`` too:
  the agent cannot tell). The backbone says which facts to store; the prompt also shows the records of the slots
  the message names and the two newest other records (a recency window).
- ``note``: the user asks to be reminded of a slot; the backbone writes a note in its
  own words from the records of that slot.
- ``consolidate``: the user asks to tidy the profile; the backbone merges the records
  of the named slots (and what the message adds) into one summary, and the merged
  records are deleted.
- ``lookup``: the user asks a question an advisory tool answers; the backbone picks the
  tool's argument from memory, the tool runs, and its recommendation is stored.
- ``sync`` / ``summary_job``: system writes without the backbone (a profile sync, a
  nightly summariser).

Node ids are ``step:<p>``, ``mem:<p>:<item>``, ``claim:<p>:<key>`` with ``p`` the
session id (``e7``), or ``<tag>:e7`` for a replay. Each writing step stores the ops it
applied (``ops`` attribute), so a repair can re-apply or drop them in time order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chronobench.protocols import GenerationParams
from chronobench.tracks.repair.agent import (
    Shown,
    View,
    make_request,
    parse_reply,
    record_evidence,
    reply_text,
    slots_question,
)
from chronobench.tracks.repair.domains import DOMAINS, MISSING, record_text, run_derivation
from chronobench.tracks.repair.lexicon import find_pairs, slot_phrase
from chronobench.tracks.repair.provenance import Recorder
from chronobench.tracks.repair.retrieval import retrieve, retrieves

# kind -> (item prefix, record source, how the message is introduced, trusted)
_MESSAGES = {
    "chat": ("pref", "chat", "from the user", True),
    "paste": ("ext", "pasted text", "pasted by the user from elsewhere", False),
}
KINDS = ("chat", "paste", "note", "consolidate", "lookup", "sync", "summary_job")


@dataclass
class StepResult:
    """What one session did: ops applied (text None deletes), steps run, backbone calls."""

    ops: list[tuple[str, str | None]] = field(default_factory=list)
    steps: int = 1
    calls: int = 0


class HistoryAgent:
    """Executes history sessions against a :class:`~chronobench.tracks.repair.agent.View`
    (mutating it), recording provenance in ``recorder``."""

    def __init__(
        self, case: dict[str, Any], backbone: Any, recorder: Recorder, params: GenerationParams
    ):
        self.case, self.backbone, self.rec, self.params = case, backbone, recorder, params
        self.domain = case["domain"]
        # Sessions whose input is gone (noise.unreplayable): re-running one re-applies
        # its recorded ops (``recorded``: event -> [(item, text or None)]), no call.
        self.unavailable: set[str] = set()
        self.recorded: dict[str, list] = {}

    def _ask(self, task: str, shown: list, question: str) -> str:
        return reply_text(
            self.backbone.generate([make_request(task, shown, question, self.params)])[0]
        )

    def execute(self, ev: dict[str, Any], view: View, tag: str = "") -> StepResult:
        """Run session ``ev`` on ``view``; returns its ops (already applied to ``view``)."""
        kind, eid = ev["kind"], ev["event"]
        if kind not in KINDS:
            raise ValueError(f"history event {eid}: kind {kind!r} not in {KINDS}")
        p = f"{tag}:{eid}" if tag else eid
        inp = None
        if ev.get("input"):
            inp = f"input:{eid}"
            if inp not in self.rec.known:
                trusted = _MESSAGES.get(kind, (0, 0, 0, kind not in ("sync", "summary_job")))[3]
                self.rec.node(inp, "input", text=ev["input"], trusted=bool(trusted))
        call = "system" if kind in ("sync", "summary_job") else "backbone"
        step = self.rec.node(f"step:{p}" + (":args" if kind == "lookup" else ""), "step", trace="history",
                             call=call, role=kind, event=eid)  # fmt: skip
        if inp:
            self.rec.edge(inp, step, "initiate")
        if eid in self.unavailable:
            return self._reapply(ev, view, step, p)
        handlers = {"note": self._note, "consolidate": self._consolidate, "lookup": self._lookup,
                    "sync": self._sync, "summary_job": self._summary_job}  # fmt: skip
        return handlers.get(kind, self._message)(ev, view, step, p, inp)

    # -- helpers --------------------------------------------------------------------------

    def _show(self, view: View, step: str, slots: set[str], recent: int = 0) -> list:
        shown = view.shown(self.domain, slots, recent=recent, rec=self.rec)
        for s in shown:
            self.rec.edge(s.node, step, "cite")
        return shown

    def _reads(self, ev: dict[str, Any], view: View, step: str, slots: set[str]) -> list:
        """The records a note or a lookup is shown: those naming ``slots``, or, for a
        session that issued a search query (the retrieval sets), what retrieval returns."""
        if not retrieves(ev):
            return self._show(view, step, slots)
        self.rec.set_attrs(step, retrieval=True)
        top = retrieve(view.items, ev["query"])
        shown = [Shown(f"m{n}", view.node(i, self.rec), i, view.items[i])
                 for n, i in enumerate(top, start=1)]  # fmt: skip
        for s in shown:
            self.rec.edge(s.node, step, "cite")
        return shown

    def _write(self, view: View, step: str, p: str, item: str, text: str, res: StepResult) -> str:
        node = self.rec.node(f"mem:{p}:{item}", "memory", item=item, text=text)
        self.rec.edge(step, node, "produce")
        if item in view.items:
            old = view.node(item, self.rec)
            self.rec.edge(step, old, "update")
            self.rec.edge(node, old, "supersede")
            view.items.pop(item)
        view.items[item], view.nodes[(item, text)] = text, node
        res.ops.append((item, text))
        return node

    def _done(self, step: str, res: StepResult) -> StepResult:
        self.rec.set_attrs(step, ops=[[i, t] for i, t in res.ops])
        return res

    def _reapply(self, ev: dict[str, Any], view: View, step: str, p: str) -> StepResult:
        """A session that cannot be re-run: its recorded writes, as they were."""
        res = StepResult()
        for item, text in self.recorded.get(ev["event"], []):
            if text is None:
                if item in view.items:
                    self.rec.edge(step, view.node(item, self.rec), "delete")
                    view.items.pop(item)
                    res.ops.append((item, None))
            else:
                self._write(view, step, p, item, text, res)
        self.rec.set_attrs(step, unavailable=True)
        return self._done(step, res)

    # -- session kinds --------------------------------------------------------------------

    def _message(self, ev, view, step, p, inp) -> StepResult:  # noqa: ANN001
        prefix, source, intro, _ = _MESSAGES[ev["kind"]]
        slots = list(DOMAINS[self.domain].slots)
        named = {s for s, _ in find_pairs(ev["input"], self.domain)}
        shown = self._show(view, step, named, recent=2)
        question = (
            f"Today is day {ev['day']}.\nNew message ({intro}): {ev['input']}\n"
            f"Which facts about the user should be stored? slots: {', '.join(slots)}. One line "
            "per fact, 'slot = value [refs]'; reply 'none' when there is nothing to store."
        )
        reply = self._ask("repair_remember", shown, question)
        res = StepResult(calls=1)
        for slot, (value, refs) in parse_reply(reply, slots).items():
            if value != MISSING:
                text = record_text(ev["day"], [(slot, value)], source)
                node = self._write(view, step, p, f"{prefix}:{slot}", text, res)
                record_evidence(self.rec, node, refs, shown, inp, "derive")
        return self._done(step, res)

    def _note(self, ev, view, step, p, inp) -> StepResult:  # noqa: ANN001
        slot = ev["slot"]
        shown = self._reads(ev, view, step, {slot})
        question = (
            f"Today is day {ev['day']}.\nThe user asked: {ev['input']}\nWrite a reminder note "
            f"about the user's {slot_phrase(slot)} in your own words: one line 'note = <text> [refs]'."
        )
        note, refs = parse_reply(self._ask("repair_note", shown, question), ["note"])["note"]
        res = StepResult(calls=1)
        if note != MISSING:
            node = self._write(
                view, step, p, f"note:{slot}", f"[day {ev['day']}] note: {note} (agent note)", res
            )
            record_evidence(self.rec, node, refs, shown, None, "derive")
        return self._done(step, res)

    def _consolidate(self, ev, view, step, p, inp) -> StepResult:  # noqa: ANN001
        slots = list(ev["slots"])
        shown = self._show(view, step, set(slots))
        question = (
            f"Today is day {ev['day']}.\nNew message (from the user): {ev['input']}\nMerge what "
            f"memory and the new message say into one profile summary. slots: {', '.join(slots)}. "
            "One line per slot, 'slot = value [refs]'."
        )
        reply = self._ask("repair_consolidate", shown, question)
        res = StepResult(calls=1)
        pairs, claims = [], []
        for slot, (value, refs) in parse_reply(reply, slots).items():
            if value == MISSING:
                continue
            claim = self.rec.node(f"claim:{p}:{slot}", "claim", key=slot, value=value)
            self.rec.edge(step, claim, "produce")
            record_evidence(self.rec, claim, refs, shown, inp, "support")
            pairs.append((slot, value))
            claims.append(claim)
        if not pairs:
            return self._done(step, res)
        item = f"summary:{ev['event']}"
        for s in shown:  # the merged records go; the summary replaces them
            if s.item != item and s.item in view.items:
                self.rec.edge(step, s.node, "delete")
                view.items.pop(s.item)
                res.ops.append((s.item, None))
        node = self._write(view, step, p, item, record_text(ev["day"], pairs, "summary"), res)
        for claim in claims:
            self.rec.edge(claim, node, "consolidate", group="merge")
        return self._done(step, res)

    def _lookup(self, ev, view, step, p, inp) -> StepResult:  # noqa: ANN001
        d = next(x for x in DOMAINS[self.domain].derivations() if x.name == ev["derivation"])
        shown = self._reads(ev, view, step, {d.source})
        question = f"Today is day {ev['day']}.\n" + slots_question(ev["input"], [d.source])
        value, refs = parse_reply(self._ask("repair_args", shown, question), [d.source])[d.source]
        arg = self.rec.node(
            f"claim:{p}:{d.source}", "claim", key=d.source, value=value, default=value == MISSING
        )
        self.rec.edge(step, arg, "produce")
        if value != MISSING:
            record_evidence(self.rec, arg, refs, shown, None, "support")
        tool = self.rec.node(f"step:{p}:tool", "step", trace="history", call="tool", role="lookup_tool",
                             event=ev["event"], tool=d.name)  # fmt: skip
        self.rec.edge(arg, tool, "cite")
        rec_value = run_derivation(d, value, DOMAINS[self.domain].slots[d.target])
        obs = self.rec.node(
            f"claim:{p}:obs", "claim", key=f"obs:{d.name}", value=f"{d.target} = {rec_value}"
        )
        self.rec.edge(tool, obs, "produce")
        self.rec.edge(arg, obs, "support", group="args")
        res = StepResult(steps=2, calls=1)
        if rec_value != MISSING:
            text = record_text(ev["day"], [(d.target, rec_value)], d.name)
            node = self._write(view, tool, p, f"tool:{d.target}", text, res)
            self.rec.edge(obs, node, "derive", group=obs)
        return self._done(tool, res)

    def _sync(self, ev, view, step, p, inp) -> StepResult:  # noqa: ANN001
        res = StepResult()
        for slot, value in ev["pairs"]:
            text = record_text(ev["day"], [(slot, value)], "profile sync")
            node = self._write(view, step, p, f"pref:{slot}", text, res)
            record_evidence(self.rec, node, ("input",), [], inp, "support")
        return self._done(step, res)

    def _summary_job(self, ev, view, step, p, inp) -> StepResult:  # noqa: ANN001
        pairs = [tuple(x) for x in ev["pairs"]]
        shown = self._show(view, step, {s for s, _ in pairs})
        res = StepResult()
        node = self._write(
            view, step, p, f"summary:{ev['event']}", record_text(ev["day"], pairs, "summary"), res
        )
        record_evidence(self.rec, node, (), shown, None, "derive")  # the job cites nothing
        return self._done(step, res)
