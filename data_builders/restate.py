"""RQ4's required set: the anchor's turns plus the turns that restate the anchor's fact.

Forgetting "what I said about X" means every turn that says X, not only the turn an
observation happens to cite. Which other turns say it is read off LoCoMo's own
annotations (never off a row's behaviour), through three routes:

- **observation**: another observation of the conversation (any session) whose statement
  says the same thing as one of the anchor's: at least :data:`SAME_FACT` of the anchor
  statement's content words (stemmed; the speakers' names left out) occur in it, and at
  least :data:`MIN_SHARED` of them. Its cited turns restate the fact.
- **qa**: a LoCoMo QA item whose answer is a forget question's answer (normalised, equal)
  and whose question says the same thing (the same overlap rule); its evidence turns
  restate the fact. A QA item with that answer whose evidence includes an anchor turn
  (evidence overlap) cites its other turns for the same fact, and counts too.
- **overlap**: another observation whose evidence includes an anchor turn and other
  turns, with at least half the anchor statement's overlap rule (:data:`SAME_FACT` / 2):
  the annotator cited those turns together for one fact.
- **echo**: the turn right before or after an anchor turn in the same session (the
  partner's reply, the speaker's own follow-up) when it holds at least :data:`ECHO` of
  the words of the anchor's statement or of one of its forget questions (and two): LoCoMo
  cites one turn per fact, and the reply that repeats it ("Congrats on the fashion
  internship!") is not cited.

The union is the anchor's **required set**: the oracle removes exactly it, and a row may
remove any of it without a precision charge. A forget question that the known set's
reference reader still answers once the required set is gone (the fact survives in a turn
no annotation ties to it) is left out for every row alike
(:func:`chronobench.tracks.selective.run.reference_survivors`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

#: Share of the anchor statement's content words another statement must hold to say the
#: same fact (and the fewest shared words).
SAME_FACT = 0.6
MIN_SHARED = 2
#: Share of the fact's words an adjacent turn must hold to echo it.
ECHO = 0.3
_QA_ID = re.compile(r"^q(\d+)$")
_OBS_ID = re.compile(r"^o(\d+)\.(\d+)(?:-.*)?$")


@lru_cache(maxsize=65536)
def _stems(text: str) -> frozenset[str]:
    from chronobench.text import content_word_set, stem

    return frozenset(stem(w) for w in content_word_set(text))


def fact_words(text: str, names: Iterable[str] = ()) -> frozenset[str]:
    """Stemmed content words of ``text`` minus the speakers' names (they occur in every
    statement about a speaker, so they say nothing about which fact it is)."""
    drop = {n for name in names for n in _stems(name)}
    return _stems(text) - drop


def same_fact(anchor: frozenset[str], other: frozenset[str], share: float = SAME_FACT) -> bool:
    """Whether ``other`` holds at least ``share`` of ``anchor``'s words (and two)."""
    if not anchor:
        return False
    shared = len(anchor & other)
    return shared >= MIN_SHARED and shared / len(anchor) >= share


@dataclass(frozen=True)
class Required:
    """An anchor's required set and where its extra turns came from."""

    turns: frozenset[int]  # the anchor's turns plus every restating turn
    extra_by_route: dict[str, int] = field(default_factory=dict)  # route -> turns it added
    questions: frozenset[str] = frozenset()  # battery ids of the matched QA items and observations


def speakers(rec: dict[str, Any]) -> list[str]:
    conv = rec.get("conversation") or {}
    return [str(conv[k]) for k in ("speaker_a", "speaker_b") if conv.get(k)]


def observation_statements(rec: dict[str, Any]) -> dict[str, str]:
    """Observation id (``oS.K``) -> its statement, for the whole conversation."""
    return {oid: text for oid, text, _ in _observations(rec)}


def _observations(rec: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """``(observation id, statement, dialog ids)`` of every session of the conversation."""
    from data_builders.locomo.source import session_numbers
    from data_builders.locomo.streams import observations

    out = []
    for s in session_numbers(rec["conversation"]):
        for k, (_, text, ids) in enumerate(observations(rec, s), start=1):
            out.append((f"o{s}.{k}", text, list(ids)))
    return out


def _qa_items(rec: dict[str, Any]) -> list[tuple[str, str, str, list[str]]]:
    """``(qa id, question, answer, dialog ids)`` of every LoCoMo QA item with an answer."""
    from data_builders.locomo.source import parse_evidence

    out = []
    for i, qa in enumerate(rec.get("qa") or []):
        if "answer" not in qa:
            continue
        ids, _ = parse_evidence(list(qa.get("evidence") or []))
        out.append((f"q{i}", str(qa.get("question", "")), str(qa["answer"]), ids))
    return out


def _norm_answer(text: str) -> str:
    from chronobench.text import normalize

    return normalize(str(text))


def required_turns(
    rec: dict[str, Any],
    where: dict[str, int],
    gold: frozenset[int],
    anchor_statements: list[str],
    forget_ids: list[str],
    texts: dict[int, str] | None = None,
) -> Required:
    """The anchor's required set (module docstring). ``where``: dialog id -> write id;
    ``anchor_statements``: what the anchor says (its observation's statement);
    ``forget_ids``: battery ids of its forget questions (``qN`` QA items, ``oS.K`` recall
    statements of an observation); ``texts``: write id -> the turn's text (for the echo
    route; none: no echo)."""
    names = speakers(rec)
    obs = _observations(rec)
    qas = _qa_items(rec)
    by_obs = {oid: text for oid, text, _ in obs}
    statements = list(anchor_statements)
    answers: list[tuple[str, frozenset[str]]] = []
    for fid in forget_ids:
        m = _OBS_ID.match(fid)
        if m and f"o{m.group(1)}.{m.group(2)}" in by_obs:
            statements.append(by_obs[f"o{m.group(1)}.{m.group(2)}"])
        m = _QA_ID.match(fid)
        if m and int(m.group(1)) < len(rec.get("qa") or []):
            qa = rec["qa"][int(m.group(1))]
            answers.append((_norm_answer(qa.get("answer", "")), fact_words(qa["question"], names)))
    facts = [fact_words(s, names) for s in statements]

    def turns(ids: list[str]) -> set[int]:
        return {where[i] for i in ids if i in where} - gold

    added: Counter[str] = Counter()
    extra: set[int] = set()
    matched: set[str] = set()

    def add(route: str, found: set[int]) -> None:
        new = found - extra
        added[route] += len(new)
        extra.update(new)

    for oid, text, ids in obs:
        mine = turns(ids)
        if not mine:
            continue
        words = fact_words(text, names)
        touches = any(where.get(i) in gold for i in ids)
        if any(same_fact(f, words) for f in facts):
            add("observation", mine)
            matched.add(oid)
        elif touches and any(same_fact(f, words, SAME_FACT / 2) for f in facts):
            add("overlap", mine)
    for qid, question, answer, ids in qas:
        mine = turns(ids)
        if not mine:
            continue
        norm = _norm_answer(answer)
        words = fact_words(question, names)
        touches = any(where.get(i) in gold for i in ids)
        for ans, qwords in answers:
            if norm == ans and (touches or same_fact(qwords, words)):
                add("qa", mine)
                matched.add(qid)
                break
    if texts:
        asked = facts + [qwords for _, qwords in answers]
        session = {j: w for w, j in where.items()}
        for j in sorted(gold):
            for near in (j - 1, j + 1):
                same = session.get(near, "").split(":")[0] == session.get(j, "").split(":")[0]
                if near in gold or near not in texts or not same:
                    continue
                words = fact_words(texts[near], names)
                if any(same_fact(f, words, ECHO) for f in asked):
                    add("echo", {near})
    return Required(frozenset(gold | extra), dict(sorted(added.items())), frozenset(matched))
