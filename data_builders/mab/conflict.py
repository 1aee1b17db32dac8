"""Conflict_Resolution: one write per numbered statement; overridden fact slots give
counterfactual probes (before the override, the earlier value is the gold answer)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from chronobench.text import normalize
from data_builders.probes import PoolConflict
from data_builders.queries import Anchor

# Two shapes pair reliably: "The REL of SUBJ is VAL." and "SUBJ's REL is VAL."
_OF_FORM = re.compile(r"^The (?P<rel>[^.]+?) of (?P<subj>.+?) (?:is|are|was|were) (?P<val>.+?)\.?$")
_POSS_FORM = re.compile(
    r"^(?P<subj>[^.]+?)'s? (?P<rel>[a-z][^.]*?) (?:is|are|was|were) (?P<val>.+?)\.?$"
)


@dataclass(frozen=True)
class Slot:
    """A parsed statement: relation, subject and value."""

    rel: str
    subj: str
    val: str

    @property
    def key(self) -> tuple[str, str]:
        return normalize(self.rel), normalize(self.subj)

    @property
    def phrase(self) -> str:
        return f"the {self.rel} of {self.subj}"


def parse_statement(text: str) -> Slot | None:
    """Parse one statement into a slot, or None when its shape is not reliable."""
    for rx in (_OF_FORM, _POSS_FORM):
        m = rx.match(text.strip())
        if m and " is " not in m["subj"] and " is " not in m["rel"]:
            return Slot(m["rel"].strip(), m["subj"].strip(), m["val"].strip())
    return None


def conflict_pairs(
    statements: list[str], stream_id: str
) -> tuple[list[PoolConflict], list[Anchor], Counter[str]]:
    """Pair statements about the same slot; return conflicts, anchors and counts.

    Anchors never contain a value: restore_to points at the first statement about a slot
    ("you were first told about the chairperson of X"), undo at its first change.
    """
    counts: Counter[str] = Counter()
    history: dict[tuple[str, str], list[tuple[int, Slot]]] = {}
    for v, text in enumerate(statements, start=1):
        slot = parse_statement(text)
        if slot is None:
            counts["statement:unparsed"] += 1
            continue
        counts["statement:parsed"] += 1
        history.setdefault(slot.key, []).append((v, slot))
    conflicts: list[PoolConflict] = []
    anchors: list[Anchor] = []
    counts["slots"] = len(history)
    for n, (_key, seq) in enumerate(sorted(history.items(), key=lambda kv: kv[1][0][0])):
        changes = [
            (a, b)
            for a, b in zip(seq, seq[1:], strict=False)
            if normalize(a[1].val) != normalize(b[1].val)
        ]
        counts["restatement_same_value"] += len(seq) - 1 - len(changes)
        if not changes:
            continue
        counts["slots_overridden"] += 1
        first_slot = seq[0][1]
        for k, ((v_old, old), (v_new, new)) in enumerate(changes):
            conflicts.append(
                PoolConflict(
                    pair_id=f"slot{n}-{k}",
                    question=f"What is {old.phrase}?",
                    old=old.val,
                    new=new.val,
                    old_version=v_old,
                    new_version=v_new,
                )
            )
        counts["pairs"] += len(changes)
        v_first, (v_change, _) = seq[0][0], changes[0][1]
        common = {
            "kind": "statement",
            "form": "clause",
            "scope": "statement",
            "family": f"slot{n}",
            "prefer_qa": frozenset({f"slot{n}-0"}),
        }
        # The first statement of the slot (restore to it) and its first override (undo it).
        for suffix, v, phrase, intent in (
            ("first", v_first, f"you were first told about {first_slot.phrase}", "restore_to"),
            ("change", v_change, f"{first_slot.phrase} was first changed", "undo"),
        ):
            anchors.append(
                Anchor(
                    anchor_id=f"slot{n}-{suffix}",
                    text=statements[v - 1],
                    phrase=phrase,
                    group=f"v{v}",
                    anchor_version=v,
                    restore_version=v,
                    undo_version=v - 1,
                    intents=(intent,),
                    **common,
                )
            )
    return conflicts, anchors, counts
