"""RQ4 (selective forgetting) on LoCoMo at turn granularity: anchors, requests, probes.

An **anchor** is an evidence-scoped unit LoCoMo annotates: an observation (its cited
turns). Its **required set** (``gold``) is the anchor's turns plus every turn that restates
the anchor's fact, found from LoCoMo's annotations (:mod:`data_builders.restate`): the
oracle removes exactly it, everything else stays. A request names it in plain words:

The **probes** of a stream are its question battery's items with a gold answer at the
last version (the ``final_qa`` probes: QA items and true recall statements; false
statements and adversarial items are left out: their gold answer holds whatever is
forgotten). They are the same for every request of the stream. Per anchor
the scorer labels them (:func:`label`): *forget* (the evidence lies in the required set
and touches an anchor turn, or the question was matched to the anchor's fact), *keep
after* (no evidence in the required set, all of it after the anchor's last turn), *keep
other* (the rest that touch no required turn); a forget question whose fact survives
outside the required set (the reference reader still answers it there:
:func:`apply_survivors`) is not scored, for any row. Only questions in the known set count (the reference reader answers them at the
last version; docs/protocol.md): an anchor without a battery question in its turns is
dropped and counted (``<source>:no_battery_question``), and so is one whose questions are
all unknown (``<source>:no_known_question``) or whose every known forget question survives
outside the required set (``<source>:fact_survives``); template anchors are drawn until
``per_stream`` are kept, so their counts are the candidates passed over.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronobench.data.schema import Probe, Stream
from chronobench.hashing import stable_hash

#: Template requests; ``{s}`` is the observation's statement (first letter lowered
#: after "that"). Written before any request reached the selective-undo resolver.
TEMPLATES = (
    "Forget that {s}",
    "Please delete what you know about this: {s}",
    "Remove from your memory the fact that {s}",
    "I told you that {s} Forget it.",
)
HELDOUT = "data_builders/user_queries/locomo_forget_heldout.jsonl"
_HELDOUT_KEYS = {"sample_id", "request", "anchor", "dialog_ids", "style"}


@dataclass(frozen=True)
class Anchor:
    """One RQ4 request and its gold: the write ids (turns) to remove."""

    anchor_id: str
    stream_id: str
    request: str
    source: str  # "template" | "user"
    gold: frozenset[int]  # the required set: the anchor's turns plus the restating turns
    note: str = ""
    turns: frozenset[int] = frozenset()  # the anchor's own turns (empty: the whole gold)
    same_fact: frozenset[str] = frozenset()  # battery ids matched to the fact elsewhere
    survives: frozenset[str] = frozenset()  # forget questions answered without the gold
    extra_by_route: tuple[tuple[str, int], ...] = ()  # restating turns per route

    @property
    def own(self) -> frozenset[int]:
        return self.turns or self.gold


@dataclass
class ForgetStream:
    """One stream's RQ4 material (the scorer's side)."""

    stream: Stream
    probes: list[Probe]  # known battery items with a gold answer at the last version
    anchors: list[Anchor]
    dropped: Counter[str] = field(default_factory=Counter)


def dialog_versions(stream: Stream) -> dict[str, int]:
    """Dialog id -> the write id (version) that committed the turn."""
    out: dict[str, int] = {}
    for w in stream.writes:
        for d in w.labels.get("dialog_ids") or []:
            out[str(d)] = int(w.version)
    return out


def stream_probes(queries: list[Any]) -> list[Probe]:
    """The stream's battery items with a gold answer at its last version, by battery id
    (read from its queries' ``final_qa`` probes; every query carries the same)."""
    seen: dict[str, Probe] = {}
    for q in queries:
        for p in q.probes:
            if p.kind != "final_qa" or not p.answers or not p.evidence_versions:
                continue
            if p.meta.get("format") == "recall" and p.meta.get("truth") is False:
                continue
            seen.setdefault(str(p.meta.get("qa_id")), p)
    return [seen[k] for k in sorted(seen)]


def label(probes: list[Probe], anchor: Anchor | frozenset[int]) -> dict[str, list[Probe]]:
    """Which probes an anchor scores, and how (module docstring); a bare set of turns is
    an anchor whose required set is its own turns."""
    if not isinstance(anchor, Anchor):
        anchor = Anchor("", "", "", "", frozenset(anchor))
    gold, own, last = anchor.gold, anchor.own, max(anchor.own)
    out: dict[str, list[Probe]] = {"forget": [], "keep_after": [], "keep_other": []}
    for p in probes:
        ev = set(p.evidence_versions)
        qid = str(p.meta.get("qa_id"))
        if ev <= gold and (ev & own or qid in anchor.same_fact):
            if qid not in anchor.survives:
                out["forget"].append(p)
        elif ev & gold:
            continue  # partly in the required set: neither forgotten nor kept whole
        elif min(ev) > last:
            out["keep_after"].append(p)
        else:
            out["keep_other"].append(p)
    return out


def _keep(
    probes: list[Probe],
    known: list[Probe],
    anchor: Anchor,
    dropped: Counter[str],
) -> bool:
    """Whether an anchor has a known forget question (else it is dropped and counted)."""
    if not label(probes, anchor)["forget"]:
        dropped[f"{anchor.source}:no_battery_question"] += 1
        return False
    if not label(known, anchor)["forget"]:
        dropped[f"{anchor.source}:no_known_question"] += 1
        return False
    return True


def complete(
    rec: dict[str, Any],
    stream: Stream,
    known: list[Probe],
    anchor: Anchor,
    statements: list[str],
) -> Anchor:
    """The anchor with its required set, the questions matched to its fact and the forget
    (:mod:`data_builders.restate`)."""
    from dataclasses import replace

    from data_builders import restate

    where = dialog_versions(stream)
    own = anchor.gold
    first = label(known, own)["forget"]
    texts = {int(w.version): " ".join(op.text or "" for op in w.ops) for w in stream.writes}
    req = restate.required_turns(
        rec, where, own, statements, [str(p.meta.get("qa_id")) for p in first], texts
    )
    same = req.questions - {str(p.meta.get("qa_id")) for p in first}
    grown = replace(anchor, gold=req.turns, turns=own, same_fact=same,
                    extra_by_route=tuple(sorted(req.extra_by_route.items())))  # fmt: skip
    return grown


def apply_survivors(bench: list[ForgetStream], survivors: dict[str, set[str]]) -> None:
    """Leave out, per anchor, the forget questions whose fact survives outside the
    required set (``survivors``: anchor id -> battery ids), and drop (and count as
    ``<source>:fact_survives``) an anchor left without one."""
    from dataclasses import replace

    for fs in bench:
        kept = []
        for a in fs.anchors:
            a = replace(a, survives=frozenset(survivors.get(a.anchor_id, set())))
            if label(fs.probes, a)["forget"]:
                kept.append(a)
            else:
                fs.dropped[f"{a.source}:fact_survives"] += 1
        fs.anchors = kept


def _statement(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def template_anchors(
    rec: dict[str, Any],
    stream: Stream,
    probes: list[Probe],
    known: list[Probe],
    n: int,
    seed: int,
    exclude: set[str],
    dropped: Counter[str],
) -> list[Anchor]:
    """Up to ``n`` observation anchors of the stream with a battery question in their
    turns, in a seeded order, each with a template request; ``exclude``: observation
    ids the held-out file uses."""
    from data_builders.locomo.source import session_numbers
    from data_builders.locomo.streams import observations

    where = dialog_versions(stream)
    cands = []
    for s in session_numbers(rec["conversation"]):
        for k, (_, text, ids) in enumerate(observations(rec, s), start=1):
            oid = f"o{s}.{k}"
            if oid in exclude or not ids or any(i not in where for i in ids):
                continue
            cands.append((oid, text, frozenset(where[i] for i in ids)))
    cands.sort(key=lambda c: (stable_hash(seed, stream.stream_id, "rq4", c[0]), c[0]))
    out: list[Anchor] = []
    for oid, text, gold in cands:
        if len(out) >= n:
            break
        pick = stable_hash(seed, stream.stream_id, "rq4-template", oid) % len(TEMPLATES)
        request = TEMPLATES[pick].format(s=_statement(text))
        anchor = Anchor(
            f"{stream.stream_id}/{oid}", stream.stream_id, request, "template", gold, f"t{pick}"
        )
        anchor = complete(rec, stream, known, anchor, [text])
        if _keep(probes, known, anchor, dropped):
            out.append(anchor)
    return out


def read_heldout(path: Path) -> list[dict[str, Any]]:
    """The held-out file's lines, checked (file, line and field named on an error)."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{n}: not JSON ({exc}); one object per line") from None
        missing = _HELDOUT_KEYS - set(row)
        extra = set(row) - _HELDOUT_KEYS
        if missing or extra:
            raise ValueError(
                f"{path}:{n}: fields {sorted(missing)} missing, {sorted(extra)} unknown; "
                f"each line has {sorted(_HELDOUT_KEYS)}"
            )
        if not isinstance(row["dialog_ids"], list) or not row["dialog_ids"]:
            raise ValueError(f"{path}:{n}: field 'dialog_ids' must be a non-empty list")
        rows.append(row)
    return rows


def user_anchors(
    rows: list[dict[str, Any]],
    rec: dict[str, Any],
    stream: Stream,
    probes: list[Probe],
    known: list[Probe],
    dropped: Counter[str],
) -> list[Anchor]:
    """The held-out requests of this stream's conversation, with their gold turns (the
    request's own words and its observation's statement say which fact it is)."""
    from data_builders.restate import observation_statements

    where = dialog_versions(stream)
    statements = observation_statements(rec)
    out = []
    for row in rows:
        if row["sample_id"] != stream.sample_id:
            continue
        unknown = [d for d in row["dialog_ids"] if d not in where]
        if unknown:
            raise ValueError(
                f"{HELDOUT}: {row['sample_id']} {row['anchor']}: dialog ids {unknown} are not "
                "turns of that conversation"
            )
        gold = frozenset(where[d] for d in row["dialog_ids"])
        oid = str(row["anchor"]).split()[-1]
        anchor_id = f"{stream.stream_id}/user/{oid}"
        anchor = Anchor(anchor_id, stream.stream_id, row["request"], "user", gold, row["style"])
        anchor = complete(rec, stream, known, anchor, [statements.get(oid, ""), row["request"]])
        if _keep(probes, known, anchor, dropped):
            out.append(anchor)
    return out


def build(
    streams: list[Stream],
    queries: dict[str, list[Any]],
    records: dict[str, dict[str, Any]],
    heldout: list[dict[str, Any]],
    known: dict[str, list[str]],
    *,
    per_stream: int,
    seed: int,
) -> list[ForgetStream]:
    """Every stream's known probes and anchors (held-out first, then templates);
    ``known``: the known set's battery ids per stream."""
    out = []
    for s in streams:
        probes = stream_probes(queries.get(s.stream_id, []))
        kn = set(known.get(s.stream_id, []))
        ok = [p for p in probes if str(p.meta.get("qa_id")) in kn]
        dropped: Counter[str] = Counter()
        rec = records[s.sample_id]
        users = user_anchors(heldout, rec, s, probes, ok, dropped)
        exclude = {r["anchor"].split()[-1] for r in heldout if r["sample_id"] == s.sample_id}
        temps = template_anchors(rec, s, probes, ok, per_stream, seed, exclude, dropped)
        out.append(ForgetStream(s, ok, users + temps, dropped))
    return out
