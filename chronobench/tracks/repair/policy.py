"""The offline backbone of the repair track: a deterministic policy behind the Backbone
protocol that reads only the prompt's text, as an LLM would.

Reading (what a careful agent does with memory): for every slot it is asked about, it
reads the records that state the slot (``slot = value`` or, through the lexicon, free
text such as a paraphrased note) and takes the value of the most recent one (highest
day; on a tie the later line); ``unknown`` when none does. It cites the record its
decision used (an older record that happens to agree is not cited). It never invents a
value.

Per prompt kind: store the facts a new message states (cited ``[input]``); write a
note about a slot in other words; merge slots into a summary (the new message wins
over memory); pick tool arguments / the answered slot; write the ``last_choice`` note;
and, as the judge of the backbone-judged baseline, drop a candidate that is a
diagnosed fault or states what a fault says and no other record does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chronobench.protocols import Completion, GenerationRequest
from chronobench.tracks.repair.domains import DOMAINS, MISSING, parse_record
from chronobench.tracks.repair.lexicon import SLOT_ALIASES, find_pairs, paraphrase, read_pairs

_SLOTS = re.compile(r"slots: ([^.?\n]+)")
_LINE = re.compile(r"^\[(m\d+)\] (.*)$")
_DAY = re.compile(r"Today is day (\d+)")
_NOTE = re.compile(r"reminder note about the user's (.+?) in your own words")
_MESSAGE = re.compile(r"^New message \([^)]*\): (.*)$", re.MULTILINE)
_UNTRUSTED = re.compile(r"^Untrusted \S+ session, day (\d+): (.*)$", re.MULTILINE)
_OWN = re.compile(r"^\[day (\d+)\] the user wrote: (.*)$")
JUDGE_MARK = "Is the UNTRUSTED session below a fault"


def asked_slots(question: str) -> list[str]:
    """The slot names a question lists after ``slots:``."""
    m = _SLOTS.search(question)
    return [s.strip() for s in m.group(1).split(",") if s.strip()] if m else []


def domain_of(slots: Sequence[str]) -> str | None:
    """The domain whose slots include every one of ``slots``."""
    return next((n for n, d in DOMAINS.items() if slots and set(slots) <= set(d.slots)), None)


def split_prompt(req: GenerationRequest) -> tuple[list[tuple[str, str]], str]:
    """([(ref, memory text)], question) from the request's last user message."""
    body = next(m.content for m in reversed(req.messages) if m.role == "user")
    head, _, question = body.partition("\n\n")
    lines = []
    for line in head.splitlines()[1:]:
        m = _LINE.match(line)
        if m:
            lines.append((m.group(1), m.group(2)))
    return lines, question


def latest(
    lines: Sequence[tuple[str, str]], slot: str, domain: str, cite_all: bool = False
) -> tuple[str, list[str]]:
    """(value of the newest record stating ``slot``, [that record's ref]): the policy
    cites the record its decision used; ``cite_all`` cites every record that agrees."""
    best: tuple[int, int, str, str] | None = None
    stated = []
    for pos, (ref, text) in enumerate(lines):
        parsed = parse_record(text)
        day = parsed[0] if parsed else 0
        for s, value in read_pairs(text, domain):
            if s == slot:
                stated.append((ref, value))
                if best is None or (day, pos) >= best[:2]:
                    best = (day, pos, value, ref)
    if best is None:
        return MISSING, []
    return best[2], [r for r, v in stated if v == best[2]] if cite_all else [best[3]]


def _line(key: str, value: str, refs: Sequence[str]) -> str:
    return f"{key} = {value}" + (f" [{', '.join(refs)}]" if refs and value != MISSING else "")


class RepairPolicyBackbone:
    """Deterministic stand-in for an LLM agent on the repair track (see module doc)."""

    name = "repair_policy"

    def __init__(self, model: str = "careful-reader-v2", *, cite_all: bool = False) -> None:
        self.model = model + ("-cite-all" if cite_all else "")
        self.cite_all = cite_all  # cite every agreeing record, not only the one used
        self.calls = 0

    def answer(self, req: GenerationRequest) -> str:
        """The reply to one request, from its message text alone."""
        lines, question = split_prompt(req)
        slots = asked_slots(question)
        if "Should the CANDIDATE memory be dropped" in question:
            return self._judge(lines, domain_of(slots) or "shopping")
        if JUDGE_MARK in question:
            return self._detect(lines, question, domain_of(slots) or "shopping")
        if "Write one memory note, 'last_choice" in question:
            return f"last_choice = {lines[0][1] if lines else MISSING}"
        note = _NOTE.search(question)
        if note:
            slot = next(s for s, names in SLOT_ALIASES.items() if names[0] == note.group(1))
            domain = domain_of([slot]) or "shopping"
            value, refs = latest(lines, slot, domain, self.cite_all)
            if value == MISSING:
                return "note = unknown"
            day = _DAY.search(question)
            return _line("note", paraphrase(slot, value, day.group(1) if day else ""), refs)
        domain = domain_of(slots)
        if domain is None:
            return "none"
        message = _MESSAGE.search(question)
        said = dict(find_pairs(message.group(1), domain)) if message else {}
        if "Which facts about the user should be stored" in question:
            out = [_line(s, v, ["input"]) for s, v in said.items() if s in slots]
            return "\n".join(out) or "none"
        out = []
        for slot in slots:
            if slot in said:  # a summary takes what the user says now over memory
                out.append(_line(slot, said[slot], ["input"]))
            else:
                value, refs = latest(lines, slot, domain, self.cite_all)
                out.append(_line(slot, value, refs))
        return "\n".join(out)

    def _judge(self, lines: Sequence[tuple[str, str]], domain: str) -> str:
        faults = [t[len("FAULT: ") :] for _, t in lines if t.startswith("FAULT: ")]
        others = [t for _, t in lines if not t.startswith(("FAULT: ", "CANDIDATE: "))]
        cand = next((t[len("CANDIDATE: ") :] for _, t in lines if t.startswith("CANDIDATE: ")), "")
        vouched = {p for t in others if t != cand for p in read_pairs(t, domain)}
        bad = {p for f in faults for p in read_pairs(f, domain)} - vouched
        return "drop" if cand in faults or set(read_pairs(cand, domain)) & bad else "keep"

    def _detect(self, lines: Sequence[tuple[str, str]], question: str, domain: str) -> str:
        """Detector verdict: a fault when a value the session states differs from the
        user's own newest earlier statement of the slot and the user never states it
        later (a later confirmation makes it the user's)."""
        m = _UNTRUSTED.search(question)
        if not m:
            return "verdict = benign"
        day = int(m.group(1))
        own = []
        for _, text in lines:
            o = _OWN.match(text)
            if o:
                own.append((int(o.group(1)), find_pairs(o.group(2), domain)))
        for slot, value in find_pairs(m.group(2), domain):
            before = [(d, v) for d, ps in own if d < day for s, v in ps if s == slot]
            later = any(s == slot and v == value for d, ps in own if d > day for s, v in ps)
            if before and max(before)[1] != value and not later:
                return "verdict = fault"
        return "verdict = benign"

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Answer each request in order (no token usage: nothing is tokenised)."""
        self.calls += len(requests)
        return [Completion(self.answer(r)) for r in requests]
