"""The offline backbone of the repair track: a deterministic policy behind the Backbone
protocol, and the parser the agent applies to any backbone's reply.

Policy (what a careful agent does with memory): for every slot it is asked about, it
reads every record in its context that mentions the slot and takes the value of the
most recent one (highest day; on a tie the later line). A slot nothing mentions is
``unknown``. It never invents a value, so its answers change exactly when the memory it
reads changes: a fault that is newer than the benign record of its slot wins. As a
judge (``repair_judge`` requests) it drops a candidate that is a diagnosed fault or
repeats a (slot, value) pair of one; as a note writer (``repair_memo``) it stores the
answer it is shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chronobench.protocols import Completion, GenerationRequest
from chronobench.repair.domains import MISSING, parse_record

_SLOTS = re.compile(r"slots: ([^.?\n]+)")


def asked_slots(question: str) -> list[str]:
    """The slot names a ``repair_args`` question asks for."""
    m = _SLOTS.search(question)
    return [s.strip() for s in m.group(1).split(",") if s.strip()] if m else []


def parse_slot_lines(reply: str, slots: Sequence[str]) -> dict[str, str]:
    """``slot = value`` lines of a reply; slots not answered are ``unknown``."""
    got: dict[str, str] = {}
    for line in reply.splitlines():
        slot, sep, value = line.strip().strip("-* ").partition("=")
        slot = slot.strip().strip("`").lower()
        if sep and slot in slots and slot not in got:
            got[slot] = value.strip().strip("`. ") or MISSING
    return {s: got.get(s, MISSING) for s in slots}


def latest_values(lines: Sequence[str], slots: Sequence[str]) -> dict[str, str]:
    """The careful-agent reading: per slot, the value of the newest record mentioning it."""
    best: dict[str, tuple[int, int, str]] = {}
    for pos, line in enumerate(lines):
        parsed = parse_record(line)
        if parsed is None:
            continue
        day, pairs = parsed
        for slot, value in pairs:
            if slot in slots and (slot not in best or (day, pos) >= best[slot][:2]):
                best[slot] = (day, pos, value)
    return {s: best[s][2] if s in best else MISSING for s in slots}


class RepairPolicyBackbone:
    """Deterministic stand-in for an LLM agent on the repair track (see module doc)."""

    name = "repair_policy"

    def __init__(self, model: str = "careful-reader-v1") -> None:
        self.model = model
        self.calls = 0

    def _one(self, req: GenerationRequest) -> str:
        if req.task == "repair_judge":
            faults = [c[len("FAULT: ") :] for c in req.context if c.startswith("FAULT: ")]
            cand = next(
                (c[len("CANDIDATE: ") :] for c in req.context if c.startswith("CANDIDATE: ")), ""
            )
            bad = {p for f in faults for p in (parse_record(f) or (0, []))[1]}
            pairs = set((parse_record(cand) or (0, []))[1])
            return "drop" if cand in faults or pairs & bad else "keep"
        if req.task == "repair_memo":
            return f"last_choice = {req.context[0] if req.context else MISSING}"
        slots = asked_slots(req.question)
        values = latest_values(req.context, slots)
        return "\n".join(f"{s} = {values[s]}" for s in slots)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Answer each request in order."""
        self.calls += len(requests)
        return [Completion(self._one(r)) for r in requests]
