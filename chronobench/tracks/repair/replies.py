"""What did not parse in the repair agent's replies: counted per reply by the
call layer (:class:`chronobench.tracks.repair.noise.CallLayer`) when the backbone is a language
model, never by the offline policy; the agent itself reads what it can, unchanged."""

from __future__ import annotations

import re
from collections import Counter

from chronobench.protocols import GenerationRequest
from chronobench.tracks.repair.agent import CITES_RE

__all__ = ["reply_failures"]

_SLOTS = re.compile(r"slots: ([a-z0-9_, ]+)\.")
_REF = re.compile(r"^\[(m\d+)\]")


def reply_failures(request: GenerationRequest, reply: str) -> Counter[str]:
    """What did not parse in a reply to a prompt listing slots: a slot an args /
    answer / memo prompt asks for given on no 'slot = value' line, or a store prompt's
    reply with no such line and not 'none' (``args_unparsed``), a value line without [refs]
    (``citation_missing``), a ref that names no record shown nor ``input``
    (``citation_wrong``). The agent still reads what it can (a missing slot is unknown;
    an uncited line rests on the whole prompt)."""
    out: Counter[str] = Counter()
    if request.task == "repair_memo":
        keys = ["last_choice"]
    else:
        m = _SLOTS.search(request.question)
        keys = [k.strip() for k in m.group(1).split(",")] if m else []
    if not keys:
        return out
    shown = {m.group(1) for line in request.context if (m := _REF.match(line))} | {"input"}
    lines: dict[str, str] = {}
    for line in reply.splitlines():
        key, sep, rest = line.strip().strip("-* ").partition("=")
        key = key.strip().strip("`").lower().replace(" ", "_")
        if sep and key in keys and key not in lines:
            lines[key] = rest
    every_slot = request.task in ("repair_args", "repair_answer", "repair_memo")
    if not every_slot and not lines and not reply.strip().lower().startswith("none"):
        out["args_unparsed"] += 1  # a store prompt: no fact line at all, and not 'none'
    for key in keys:
        if key not in lines:
            if every_slot:  # asked for every slot: each missing one is unparsed
                out["args_unparsed"] += 1
            continue
        if request.task == "repair_memo":
            continue  # the note cites nothing by design
        cited = CITES_RE.search(lines[key])
        refs = [r.strip().lower() for r in cited.group(1).split(",") if r.strip()] if cited else []
        if not refs:
            out["citation_missing"] += 1
        elif any(r not in shown for r in refs):
            out["citation_wrong"] += 1
    return out
