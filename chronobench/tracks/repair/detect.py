"""Fault detectors: which sessions of a case's log wrote faulty memory.

A detector sees what a deployed agent has: the session log (the agent's view of the case)
and the store; never the generator's fault list. It returns the sessions it flags; the
records those sessions wrote become the diagnosis a repair method is given. Untrusted
sessions are the pastes, the profile syncs, the nightly summaries and the messages
forwarded into the thread; most of them are correct (docs/repair.md), so flagging by
kind is only a floor.

- ``untrusted``: flag every untrusted session (the recall-first floor).
- ``judge``: one backbone call per untrusted session: the prompt shows what the session
  states and the user's own typed messages naming the same slots, with their days; the
  backbone answers ``verdict = fault`` or ``verdict = benign``.
- ``surface``: the zero-call floor read off the generator's construction: flag an
  untrusted session when a later note, lookup or merge reads a slot it states while its
  statement is still the newest one in the log (the generator follows every fault with
  such a session and no benign one). No backbone call; it reads only the log.
- ``surface_lookup``: the zero-call rule the earned sets still allow: flag the last
  untrusted session that states the advisory chain's first slot and is read by a lookup
  before anything restates the slot (a chain-family fault holds that slot from its
  session on, so no benign session on it can come later). No backbone call.

Register another with :data:`DETECTORS` (``name -> callable(view, mem, backbone, params)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chronobench.tracks.repair.agent import Shown, make_request, parse_reply, reply_text
from chronobench.tracks.repair.lexicon import find_pairs, slot_phrase
from chronobench.tracks.repair.policy import JUDGE_MARK  # the offline judge answers this question

UNTRUSTED = ("paste", "sync", "summary_job", "forwarded")
FORWARDED = "Forwarded from "


def session_kind(ev: dict[str, Any]) -> str:
    """The session's kind as the log shows it; a chat forwarded from elsewhere is
    ``forwarded`` (its text says so, for faulty and benign ones alike)."""
    if ev["kind"] == "chat" and (ev.get("input") or "").startswith(FORWARDED):
        return "forwarded"
    return ev["kind"]


def untrusted_sessions(view: dict[str, Any]) -> list[dict[str, Any]]:
    """The sessions whose content the user did not type in this thread."""
    return [ev for ev in view["events"] if session_kind(ev) in UNTRUSTED]


def statement(ev: dict[str, Any]) -> str:
    """What an untrusted session states, as text (a summary job has no input: its pairs)."""
    if ev["kind"] == "summary_job":
        return "nightly summary: " + "; ".join(f"{slot_phrase(s)} = {v}" for s, v in ev["pairs"])
    return ev.get("input") or ""


def stated_pairs(ev: dict[str, Any], domain: str) -> list[tuple[str, str]]:
    """(slot, value) pairs the session states."""
    if ev.get("pairs"):
        return [(s, v) for s, v in ev["pairs"]]
    return find_pairs(ev.get("input") or "", domain)


@dataclass
class Detection:
    """Flagged sessions and what deciding cost."""

    events: list[str]
    calls: int = 0
    notes: dict[str, Any] = field(default_factory=dict)


def flag_untrusted(view: dict[str, Any], mem: Any, backbone: Any, params: Any) -> Detection:
    """Every untrusted session is a fault (recall 100, precision the fault share)."""
    return Detection([ev["event"] for ev in untrusted_sessions(view)])


def judge_request(view: dict[str, Any], ev: dict[str, Any], params: Any) -> Any:
    """The judging prompt for one untrusted session: the user's own typed messages that
    name a slot the session states (any day, so a later confirmation counts)."""
    domain = view["domain"]
    slots = [s for s, _ in stated_pairs(ev, domain)]
    own = []
    for other in view["events"]:
        text = other.get("input") or ""
        typed = session_kind(other) in ("chat", "consolidate") and text
        if typed and {s for s, _ in find_pairs(text, domain)} & set(slots):
            own.append(f"[day {other['day']}] the user wrote: {text}")
    shown = [Shown(f"m{n}", "", "", t) for n, t in enumerate(own, start=1)]
    question = (
        f"{JUDGE_MARK} (it may be wrong: an old value, another person's data, a bad copy)?\n"
        f"Untrusted {session_kind(ev)} session, day {ev['day']}: {statement(ev)}\n"
        f"slots: {', '.join(slots) or 'none'}. Reply with one line, 'verdict = fault' or "
        "'verdict = benign'."
    )
    return make_request("repair_detect", shown, question, params)


def backbone_judge(view: dict[str, Any], mem: Any, backbone: Any, params: Any) -> Detection:
    """One backbone call per untrusted session (see module doc)."""
    sessions = [ev for ev in untrusted_sessions(view) if stated_pairs(ev, view["domain"])]
    if not sessions:
        return Detection([])
    replies = backbone.generate([judge_request(view, ev, params) for ev in sessions])
    flagged = []
    for ev, reply in zip(sessions, replies, strict=True):
        verdict = parse_reply(reply_text(reply), ["verdict"])["verdict"][0].lower()
        if verdict.startswith("fault"):
            flagged.append(ev["event"])
    return Detection(flagged, calls=len(sessions))


FOLLOW_UPS = ("note", "lookup", "consolidate")


def followed_up(view: dict[str, Any], mem: Any, backbone: Any, params: Any) -> Detection:
    """Flag each untrusted session a follow-up reads before anything restates its slot
    (see module doc); no backbone call."""
    domain, events = view["domain"], view["events"]
    flagged = []
    for n, ev in enumerate(events):
        if session_kind(ev) not in UNTRUSTED:
            continue
        open_slots = {s for s, _ in stated_pairs(ev, domain)}
        for later in events[n + 1 :]:
            if not open_slots:
                break
            if later["kind"] in FOLLOW_UPS and _followed(later, domain) & open_slots:
                flagged.append(ev["event"])
                break
            open_slots -= {s for s, _ in stated_pairs(later, domain)}
    return Detection(flagged)


def _followed(ev: dict[str, Any], domain: str) -> set[str]:
    """The slot a follow-up is about: a note's, a lookup's argument, a merge's first
    named slot (the generator lists the slot that prompted the merge first)."""
    from chronobench.tracks.repair.history import session_reads

    if ev["kind"] == "consolidate":
        return set(ev["slots"][:1])
    return session_reads(ev, domain)


def last_looked_up(view: dict[str, Any], mem: Any, backbone: Any, params: Any) -> Detection:
    """Flag the last untrusted session a lookup reads (see module doc); no backbone call."""
    from chronobench.tracks.repair.domains import DOMAINS

    domain, events = view["domain"], view["events"]
    head = DOMAINS[domain].chain[0].source
    read = []
    for n, ev in enumerate(events):
        if session_kind(ev) not in UNTRUSTED or head not in dict(stated_pairs(ev, domain)):
            continue
        for later in events[n + 1 :]:
            if later["kind"] == "lookup" and head in _followed(later, domain):
                read.append(ev["event"])
                break
            if head in dict(stated_pairs(later, domain)):
                break
    return Detection(read[-1:])


DETECTORS: dict[str, Callable[..., Detection]] = {
    "untrusted": flag_untrusted,
    "judge": backbone_judge,
    "surface": followed_up,
    "surface_lookup": last_looked_up,
}


def detection_scores(case: dict[str, Any], flagged: list[str]) -> dict[str, float]:
    """Session-level true / false positives and misses against the generator's faults
    (scorer side: ``case`` is the full case)."""
    true = {f["event"] for f in case["faults"]}
    got = set(flagged)
    return {
        "det_tp": float(len(got & true)),
        "det_fp": float(len(got - true)),
        "det_fn": float(len(true - got)),
    }
