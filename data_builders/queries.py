"""Anchor-grounded rollback queries: uniqueness filter, deterministic selection, rendering."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from chronobench.data.schema import RollbackQuery
from chronobench.hashing import pick, stable_hash
from chronobench.text import content_word_set, date_like, jaccard
from data_builders.templates import CLAUSE_FORMS, NOUNS, TEMPLATES, TOPIC_FORMS

INTENTS = ("restore_to", "undo")


@dataclass
class Anchor:
    """A piece of content that singles out one point of a stream.

    ``text`` is the raw source string (hidden from systems); ``phrase`` is the clause or
    topic used in the query; ``group`` is the unit anchors must be distinct across
    (a session for LoCoMo, a write for MAB).
    """

    anchor_id: str
    kind: str  # "event" | "qa" | "statement" | "passage"
    text: str
    phrase: str
    form: str  # "clause" | "topic"
    scope: str  # key of templates.NOUNS
    group: str
    anchor_version: int
    restore_version: int
    undo_version: int
    exclude_qa: frozenset[str] = frozenset()
    prefer_qa: frozenset[str] = frozenset()
    intents: tuple[str, ...] = INTENTS
    family: str = ""  # anchors of one family (e.g. one fact slot) are not rivals
    words: frozenset[str] = field(default_factory=frozenset)


def filter_anchors(
    anchors: list[Anchor], *, threshold: float = 0.5, min_words: int = 2
) -> tuple[list[Anchor], Counter[str]]:
    """Keep the anchors that single out one point; count the others by reason.

    Dropped: date-like text in the phrase, too few content words, a near-duplicate
    (content-word Jaccard >= threshold) of an anchor in another group, or a repeat of an
    anchor already kept in the same group.
    """
    drops: Counter[str] = Counter()
    ok: list[Anchor] = []
    for a in anchors:
        a.words = content_word_set(a.phrase)
        why = date_like(a.phrase)
        if why:
            drops[f"{a.kind}:{why}"] += 1
        elif len(a.words) < min_words:
            drops[f"{a.kind}:too_short"] += 1
        else:
            ok.append(a)
    kept: list[Anchor] = []
    for a in ok:
        others = (b for b in ok if b.group != a.group and not (a.family and a.family == b.family))
        if any(jaccard(a.words, b.words) >= threshold for b in others):
            drops[f"{a.kind}:near_duplicate_other_write"] += 1
        elif any(b.group == a.group and jaccard(a.words, b.words) >= threshold for b in kept):
            drops[f"{a.kind}:duplicate_in_write"] += 1
        else:
            kept.append(a)
    return kept, drops


def select(
    anchors: list[Anchor], stream_id: str, max_queries: int, seed: int
) -> list[tuple[Anchor, str]]:
    """Choose ``(anchor, intent)`` pairs: all pairs when ``max_queries`` is 0, else a
    hash-ordered, intent-balanced set that alternates anchor kinds and reuses no anchor
    while fresh ones remain."""
    if max_queries <= 0:
        return [(a, i) for a in anchors for i in INTENTS if i in a.intents]
    by_kind: dict[str, list[Anchor]] = {}
    for a in sorted(
        anchors, key=lambda a: (stable_hash(seed, stream_id, a.anchor_id), a.anchor_id)
    ):
        by_kind.setdefault(a.kind, []).append(a)
    order: list[Anchor] = []  # round-robin over kinds so events and QA anchors both appear
    lists = [by_kind[k] for k in sorted(by_kind)]
    while any(lists):
        for lst in lists:
            if lst:
                order.append(lst.pop(0))
    quota = {"restore_to": (max_queries + 1) // 2, "undo": max_queries // 2}
    chosen: list[tuple[Anchor, str]] = []
    for rnd in range(2):  # second round reuses anchors with the other intent
        for a in order:
            taken = {i for b, i in chosen if b is a}
            free = [i for i in a.intents if i not in taken and quota[i] > 0]
            if not free or (rnd == 0 and taken):
                continue
            first = INTENTS[stable_hash(seed, stream_id, a.anchor_id, "intent") % 2]
            intent = first if first in free else free[0]
            chosen.append((a, intent))
            quota[intent] -= 1
    return chosen


def render(anchor: Anchor, intent: str, key: str) -> tuple[str, str]:
    """Return ``(query text, template id)`` for an anchor and intent, chosen by hash."""
    forms = CLAUSE_FORMS if anchor.form == "clause" else TOPIC_FORMS
    desc = pick(forms, key, "form").format(x=anchor.phrase)
    noun = pick(NOUNS[anchor.scope], key, "noun")
    templates = TEMPLATES[intent]
    idx = stable_hash(key, "template") % len(templates)
    text = templates[idx].format(ref=f"{noun} {desc}")
    return text[0].upper() + text[1:], f"{intent}:{idx}"


def make_query(anchor: Anchor, intent: str, stream_id: str, seed: int) -> RollbackQuery:
    """Build the probe-less query for one anchor and intent."""
    qid = f"{stream_id}/{intent}/{anchor.anchor_id}"
    text, template = render(anchor, intent, f"{seed}:{qid}")
    target = anchor.restore_version if intent == "restore_to" else anchor.undo_version
    return RollbackQuery(
        query_id=qid,
        stream_id=stream_id,
        text=text,
        intent=intent,  # type: ignore[arg-type]
        source="template",
        target_version=target,
        anchor_version=anchor.anchor_version,
        anchor=anchor.text,
        anchor_kind=anchor.kind,
        template=template,
    )
