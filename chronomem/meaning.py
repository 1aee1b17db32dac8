"""A second reading of a request's content by a sentence model that reads meaning.

The rules (parse, retrieval, reranker) find the commit a request names by the words the
request shares with the memory. A request that tells the event in other words ("got
hitched" for a wedding, "a two-wheeled outing" for a bike ride, "the pendant that keeps
her near God" for a cross necklace) shares few of them: the rules then rank first a commit
that holds only some of the clause's words. This stage reads such a request again:

- **when** its parse has no structure but an offset from the event (no ordinal, weekday,
  named time, ruled-out clause or knowledge state: those place the event by rules of their
  own; "two days after X" reads X as any content, then the offset applies), the rules' best
  commit holds fewer than :attr:`MeaningStage.support` of the request's evidence words
  (:attr:`chronomem.parse.ParsedRequest.evidence`: no courtesy, no words said in passing),
  and the rules do not clearly prefer it: its score leads the runner-up's by less than
  :attr:`MeaningStage.rules_lead` (a request that retells an event in words of its own,
  as LoCoMo's event summaries do, often holds few of the chat's words while the rules
  still single the chat out);
- **what** it reads: the clause as read against the memory (slips respelt, related words
  added), without its courtesy and asides (:func:`chronomem.nocontent.without_asides`),
  and without the names that open the memory's lines as speakers ("Caroline: ...": every
  chat holds them, so they say whose chat, not which, and a sentence model follows them);
- **how**: each commit of the pool is scored by its line nearest that text (cosine of
  :attr:`MeaningStage.embedder`'s vectors), and the best commit moves first when it leads
  the second by :attr:`MeaningStage.margin` and the rules' pick by twice that.

The embedder is the store's choice (``ChronoMem(meaning=...)``); the benchmark's is
all-mpnet-base-v2 (``python -m chronobench install-model mpnet``). The gate and the two
margins were chosen on development request files only (docs/nl_parse.md, "A model that
reads meaning").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from chronomem import parse as ps
from chronomem import reader as rd
from chronomem.embedders import resolve_embedder, rounded, shared_cache, similarities
from chronomem.nocontent import without_asides
from chronomem.rerank import delta_lines, descriptor_terms

__all__ = [
    "MARGIN",
    "POOL",
    "RULES_LEAD",
    "SUPPORT",
    "MeaningStage",
    "meaning_stage",
    "repick",
    "speakers",
]

#: The gate: the rules' best commit holds fewer than this share of the request's evidence
#: words.
SUPPORT = 0.67
#: The best commit's lead over the second (and half its lead over the rules' pick).
MARGIN = 0.03
#: The gate: the rules' pick leads their runner-up by less than this (ranking scores).
RULES_LEAD = 0.2
#: At most this many commits are read: every visible one in a smaller scope, else the
#: rules' candidates and the store's dense stage's best for the same text.
POOL = 200

# A line that opens with a speaker: "[10:37 am on 27 June, 2023] Caroline: ...".
_SPEAKER = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?([A-Z][\w'-]*)\s*:")


@dataclass(frozen=True)
class MeaningStage:
    """The stage's model and thresholds (see the module docstring)."""

    embedder: Any
    support: float = SUPPORT
    margin: float = MARGIN
    pool: int = POOL
    rules_lead: float = RULES_LEAD
    # An optional language model that reads the best candidates once the gate opens
    # (chronomem.reader.ReaderStage); its pick, when it is clear, replaces the embedder's.
    reader: Any = None

    def __post_init__(self) -> None:
        if not callable(getattr(self.embedder, "encode", None)):
            raise TypeError(f"meaning embedder {self.embedder!r} has no encode(list[str])")
        if self.reader is not None and not isinstance(self.reader, rd.ReaderStage):
            raise TypeError(f"meaning reader {self.reader!r} is not a chronomem.reader.ReaderStage")
        if (
            not 0.0 <= self.support <= 1.0
            or self.margin < 0
            or self.pool < 1
            or self.rules_lead < 0
        ):
            raise ValueError(
                f"meaning stage: support in [0, 1], margin >= 0, pool >= 1 and rules_lead "
                f">= 0, got {self.support}, {self.margin}, {self.pool}, {self.rules_lead}"
            )


def meaning_stage(spec: Any) -> MeaningStage | None:
    """``spec`` as a stage: None (no stage), a :class:`MeaningStage`, or an embedder spec
    that :func:`chronomem.resolve_embedder` takes (a model name or path, a mapping with
    ``model`` / ``runtime``, or an object with ``encode``) at the default thresholds."""
    if spec is None or isinstance(spec, MeaningStage):
        return spec
    if isinstance(spec, str) and spec == "hash":
        raise ValueError("meaning: the hash embedder matches words, not meanings; name a model")
    return MeaningStage(resolve_embedder(dict(spec) if isinstance(spec, Mapping) else spec))


# Operators that move from the event the content names by a count of days or chats: the
# event is read as any other content clause. An ordinal or a weekday counts mentions or
# dates, which a reading by meaning does not see.
_FROM_EVENT = frozenset({"offset", "step"})


def structured(p: ps.ParsedRequest) -> bool:
    """Whether the request places its event by a rule of its own (left to the rules): an
    ordinal, a weekday, a named time, a ruled-out clause or a knowledge state."""
    kinds = {o.kind for o in p.operators}
    return bool(kinds - _FROM_EVENT or p.time is not None or p.excluded or p.knowledge)


def support(words: Iterable[str], descriptor: str) -> float:
    """The share of ``words`` (index tokens: a request's evidence words) that
    ``descriptor`` holds."""
    wanted = set(words)
    return len(wanted & descriptor_terms(descriptor)) / max(1, len(wanted))


def speakers(lines: list[str]) -> set[str]:
    """Lower-cased names that open ``lines`` as speakers ("Caroline: ...")."""
    return {m.group(1).lower() for line in lines if (m := _SPEAKER.match(line))}


def reading(clause: str, names: set[str]) -> str:
    """The text the model reads: ``clause`` without its asides and without ``names``."""
    kept = [
        w
        for w in without_asides(clause).split()
        if re.sub(r"'s$", "", w.strip(',.;:!?"()').lower()) not in names
    ]
    return " ".join(w for w in kept if w.strip(" ,"))


def repick(
    p: ps.ParsedRequest,
    ranked: list[tuple[int, float]],
    stage: MeaningStage,
    descriptors: Callable[[list[int]], dict[int, str]],
    pool: Callable[[str, int], list[int]],
) -> tuple[list[tuple[int, float]], dict[str, Any] | None]:
    """``ranked`` (the rules' described commits, best first) with the stage's pick moved
    first when the gate opens and the pick leads (module docstring); also the step the
    plan shows (None: the rules' order stands).

    ``descriptors(vids)``: the commits' descriptors. ``pool(text, n)``: the commits the
    stage reads for ``text`` (every visible one when at most ``n``)."""
    if not ranked or structured(p) or not p.clause.strip():
        return ranked, None
    # A single candidate, or one the rules rank clearly first, stands.
    if len(ranked) < 2 or float(ranked[0][1]) - float(ranked[1][1]) >= stage.rules_lead:
        return ranked, None
    top = ranked[0][0]
    first = descriptors([top]).get(top, "")
    share = support(p.evidence or p.content, first)
    if share >= stage.support:
        return ranked, None
    vids = list(dict.fromkeys([*(v for v, _ in ranked), *pool(p.clause, stage.pool)]))
    texts = descriptors(vids)
    lines = {v: delta_lines(texts.get(v, "")) for v in vids}
    names = speakers([ln for group in lines.values() for ln in group])
    text = reading(p.clause, names)
    if not text:
        return ranked, None
    flat = [ln for v in vids for ln in lines[v]]
    if len(vids) < 2 or not flat:
        return ranked, None
    vecs = np.asarray(shared_cache(stage.embedder).encode([text, *flat]))
    sims = rounded(similarities(vecs[1:], vecs[0]))
    score: dict[int, float] = {}
    pos = 0
    for v in vids:
        n = len(lines[v])
        if n:
            score[v] = float(sims[pos : pos + n].max())
        pos += n
    order = sorted(score, key=lambda v: (-score[v], v))
    best = order[0]
    lead = score[best] - score[order[1]] if len(order) > 1 else score[best]
    over_rules = score[best] - score.get(top, -1.0)
    step = {
        "read": text,
        "support": round(share, 3),
        "from": int(top),
        "commit": int(best),
        "lead": round(lead, 6),
    }
    if stage.reader is not None:
        shown = [v for v, _ in ranked[: stage.reader.rules_top]] + order[: stage.reader.meaning_top]
        nearest = {}
        pos = 0
        for v in vids:
            n = len(lines[v])
            if v in shown and n:
                part = sims[pos : pos + n]
                nearest[v] = [lines[v][i] for i in np.argsort(-part, kind="stable")]
            pos += n
        pick, scores = rd.read(stage.reader, p.text, nearest)
        step["reader"] = {str(v): s for v, s in scores.items()}
        if pick is not None:
            step["commit"] = int(pick)
            if pick == top:
                return ranked, {**step, "moved": False}
            head = float(ranked[0][1]) + 1.0
            moved = [(pick, head), *[(v, s) for v, s in ranked if v != pick]]
            return moved, {**step, "moved": True}
    if best == top or lead < stage.margin or over_rules < 2 * stage.margin:
        return ranked, {**step, "moved": False}
    head = float(ranked[0][1]) + 1.0
    return [(best, head), *[(v, s) for v, s in ranked if v != best]], {**step, "moved": True}
