"""Repair cases whose diagnosis must be earned (builder ``repair-4``; sets
``earned_controlled`` and ``earned_stress``).

The ``repair-3`` sets (:mod:`chronobench.tracks.repair.generate`) follow every fault with a
note, an advisory lookup or a merge about its slot and never follow a benign session
so; they also list the faulty slot first in a drifted summary and in the merge that
prompted it, and their benign summaries never change a value. A rule reading only the
session log therefore finds every fault with no backbone call. Those sets stay as the
published control; this module builds the sets where that construction is gone:

- every benign untrusted session is a **twin** of a fault: the same kind and source
  pool, then the same follow-up a fault's family gets (a note on its slot, an advisory
  lookup on it, a merge with it, two chained lookups, or a lookup and a later typed
  chat stating the same value), drawn from the same family distribution;
- benign summaries change a value as often as other benign kinds do (half restate,
  half bring a correct new value, half of those confirmed later by the user);
- the user's own typed statements get follow-ups too (notes and merges on slots no
  untrusted session touched);
- the slots of every merge and every nightly summary are listed in shuffled order;
- faults and twins are placed by one random permutation, so each untrusted position in
  the log is as likely as any other to hold a fault.

What still differs between a fault and a benign twin is the content: whether the value
agrees with what the user says before and after. That is the detector's job.
"""

from __future__ import annotations

import random
from typing import Any

from chronobench.tracks.repair.generate import (
    CHAIN_FAMILIES,
    FAMILIES,
    FAULT_KIND,
    Redraw,
    World,
    follow_up,
    place_fault,
    used_slots,
)

__all__ = ["EARNED_SETS", "EarnedWorld", "draft_earned"]

EARNED_SETS = ("earned_controlled", "earned_stress")
# Benign twins per fault (75% of the untrusted sessions benign when every twin finds a
# slot; stress cases try one more, as in the control sets).
TWINS_PER_FAULT = 3
# Chance, before each fault or twin, of a follow-up on the user's own typed statement.
OWN_FOLLOW_UP = 0.15


class EarnedWorld(World):
    """The control world with shuffled slot order in merges and nightly summaries."""

    def summary_job(self, pairs: list[tuple[str, str]], drifted: str | None) -> dict[str, Any]:
        pairs = list(pairs)
        self.rng.shuffle(pairs)
        return super().summary_job(pairs, drifted)

    def merge_order(self, listed: list[str]) -> list[str]:
        """Shuffled: the control sets put the slot that prompted the merge first."""
        self.rng.shuffle(listed)
        return listed

    # -- feasibility -------------------------------------------------------------------

    def free(self) -> list[str]:
        """Slots no fault route or pending confirmation holds, with a value."""
        return [s for s in self.d.slots if s not in self.protected and self.value(s)]

    def family_fits(self, family: str, slot: str | None = None) -> bool:
        """Whether a benign session can be followed up as ``family`` now without touching
        a slot a fault route holds."""
        free = self.free()
        if family in CHAIN_FAMILIES:
            head = self.d.chain[0].source
            targets = {d.target for d in self.d.chain}
            return head in free and not targets & self.protected and (slot in (None, head))
        if family == "consolidation":
            # the slot, up to two more to merge, and one left for the new statement (else
            # the merge's new statement would fall on a slot a fault route holds)
            return len(free) >= 4
        return bool(free)


def _phrase(slot: str) -> str:
    from chronobench.tracks.repair.lexicon import slot_phrase

    return slot_phrase(slot)


def _value_like_fault(w: World, kind: str, slot: str) -> str:
    """A correct new value drawn as a fault of the same kind draws its value: a sync
    brings back the user's previous value when there is one (as a stale fault does)."""
    cur = w.value(slot)
    if kind == "sync":
        old = [v for v in w.said.get(slot, [])[:-1] if v != cur]
        if old:
            return old[-1]
    return w.other(slot, cur)


def twin(w: EarnedWorld, kind: str, family: str) -> dict[str, Any] | None:
    """A correct session of ``kind`` (an untrusted kind, or ``chat``: the user's own
    typed statement) followed up as a fault of ``family`` would be. Returns its log
    entry, or None when no slot allows that family now. Only slots no fault route
    holds are used; they are held only while the follow-up is built."""
    if not w.family_fits(family):
        return None
    rng, free = w.rng, w.free()
    slot = w.d.chain[0].source if family in CHAIN_FAMILIES else rng.choice(free)
    held = set(w.protected)
    update = rng.random() < 0.5 or kind == "chat"
    value = _value_like_fault(w, kind, slot) if update else w.value(slot)
    w.protected.add(slot)
    if kind == "summary_job":
        others = [s for s in free if s != slot]
        group = rng.sample(others, k=min(len(others), rng.choice((1, 2))))
        pairs = [(slot, value)] + [(s, w.value(s)) for s in group]
        # A changed value rests on nothing in memory (as a drifted one does).
        ev = w.summary_job(pairs, slot if update else None)
    elif kind == "sync":
        ev = w.sync(slot, value)
    else:
        ev = w.say(slot, value, kind)
    confirm = kind != "chat" and update and rng.random() < 0.5
    w.noise(0.4)
    follow_up(w, family, slot, value, before=None)  # no earlier value: the route check passes
    if confirm:
        w.noise(0.3)
        w.say(slot, value)  # the user's own confirmation, later
    w.protected = held
    mode = ("update_confirmed" if confirm else "update") if update else "restate"
    return {"event": ev["event"], "kind": kind, "mode": mode, "slot": slot, "family": family}


def _place(w: EarnedWorld, kind: str, family: str) -> dict[str, Any] | None:
    """The twin as drawn, or with the first other family that fits now."""
    for fam in [family] + w.rng.sample([f for f in FAMILIES if f != family], k=len(FAMILIES) - 1):
        done = twin(w, kind, fam)
        if done:
            return done
    return None


def draft_earned(
    rng: random.Random, domain: str, plan: list[tuple[str, str]], stress: bool
) -> dict[str, Any]:
    """One earned case before the agent runs; ``plan`` is [(fault type, family), ...]."""
    w = EarnedWorld(rng, domain)
    slots = list(w.d.slots)
    rng.shuffle(slots)
    for s in slots:  # the user states every slot, then updates a few
        w.say(s, rng.choice(w.d.slots[s]))
    for s in rng.sample(slots, k=rng.randint(1, 3)):
        w.say(s, w.other(s, w.value(s)))
    per = TWINS_PER_FAULT + int(stress)
    twins = [(FAULT_KIND[t], rng.choice(FAMILIES)) for t, _ in plan for _ in range(per)]
    # One permutation of faults and twins decides the order; the faults keep plan order.
    order: list[Any] = ["fault"] * len(plan) + twins
    rng.shuffle(order)
    faults: list[dict[str, Any]] = []
    benign: list[dict[str, Any]] = []
    waiting: list[tuple[str, str]] = []  # twins that found no slot yet: tried again later
    head = w.d.chain[0].source
    plan_left = list(plan)
    for item in order:
        if rng.random() < OWN_FOLLOW_UP:
            own = _place(w, "chat", rng.choice(("paraphrase", "consolidation")))
            if own:
                benign.append({**own, "own": True})
        if item != "fault":
            placed = _place(w, *item)
            if placed:
                benign.append(placed)
            else:
                waiting.append(item)
            continue
        ftype, family = plan_left.pop(0)
        # A twin may already hold the head slot: a chain fault then takes another family.
        taken = head in used_slots(faults) or head in w.protected
        place_fault(w, ftype, family, faults, head, slots, stress, head_taken=taken)
        still = []
        for kind, fam in waiting:
            placed = _place(w, kind, fam)
            if placed:
                benign.append(placed)
            else:
                still.append((kind, fam))
        waiting = still
    w.noise(0.3)  # a later benign write a version rollback would lose
    if not faults:
        raise Redraw("no fault placed")
    w.benign_log = [
        {k: v for k, v in b.items() if k != "own"} for b in benign if b["kind"] != "chat"
    ]
    case = w.case(faults, {k: rng.choice(v) for k, v in w.d.params.items()})
    case["own_follow_ups"] = [b["event"] for b in benign if b["kind"] == "chat"]
    case["twins_unplaced"] = len(waiting)
    return case
