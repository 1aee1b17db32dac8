"""A language model that reads the chats a request may mean: query likelihood.

A request that retells its event in words of its own ("Nate went and got his mop
recoloured", "Audrey had her pack seen by a pet shrink") shares few words with the chat
it means, and a sentence model (:mod:`chronomem.meaning`) often puts first a chat whose
lines share the request's surface topic rather than its event. Asked to *choose* among
the chats, a small instruct model does worse still (docs/nl_parse.md, s51). Asked
something narrower it does better: shown one chat's lines, how likely is the request's
event, word by word, as the user's later retelling of that chat? The chat under which the
retelling is most likely is the pick. This is query-likelihood reranking (a question
generator's log-probability of the question given a passage) with the request's event in
the question's place; each chat is scored on its own, so no order or rank is shown.

- **which chats**: the rules' first :attr:`ReaderStage.rules_top` and the sentence
  model's first :attr:`ReaderStage.meaning_top` of the meaning stage's pool;
- **what is shown of each**: its :attr:`ReaderStage.lines` lines nearest the request by
  the sentence model, after the chat's date;
- **what is scored**: the request's event (:func:`event_span`: what follows the word
  that places it, "just before X", "the chat where X"), the request's own verbs and
  courtesy left out: they are the same under every chat and only add noise;
- **when it decides**: its best chat leads the second by :attr:`ReaderStage.margin`
  nats; else the sentence model's decision stands.

The model is anything with ``loglik(pairs) -> list[float]``: the summed log-probability
of each pair's continuation after its context (:class:`Likelihood`). The benchmark lends
Qwen2.5-Coder-1.5B-Instruct on CTranslate2 (``retriever.reader=qwen-1b5``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "LINES",
    "MARGIN",
    "Likelihood",
    "ReaderStage",
    "context",
    "continuation",
    "event_span",
    "read",
]

#: The best chat's lead (nats) over the second for the reader to decide.
MARGIN = 1.0
#: Lines shown of each chat.
LINES = 2
#: Log-probabilities are kept to this many decimals, so a CPU's last bits do not decide.
DECIMALS = 2


@runtime_checkable
class Likelihood(Protocol):
    """A causal language model that scores text."""

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """For each (context, continuation): the summed log-probability of the
        continuation's tokens after the context."""
        ...


@dataclass(frozen=True)
class ReaderStage:
    """The reader's model and settings (see the module docstring)."""

    model: Any
    lines: int = LINES
    rules_top: int = 3
    meaning_top: int = 4
    margin: float = MARGIN

    def __post_init__(self) -> None:
        if not callable(getattr(self.model, "loglik", None)):
            raise TypeError(f"reader model {self.model!r} has no loglik(pairs)")
        if self.lines < 1 or self.rules_top < 0 or self.meaning_top < 0 or self.margin < 0:
            raise ValueError(
                f"reader: lines >= 1, rules_top and meaning_top >= 0 and margin >= 0, got "
                f"{self.lines}, {self.rules_top}, {self.meaning_top}, {self.margin}"
            )


# Where a request's event begins: after the word that places it ("just before X", "the
# chat where X", "the talk about X").
_EVENT_OPENS = re.compile(
    r"\b(?:(?:just|right|immediately)\s+)?(?:before|after|since|from|once|when|where|until|"
    r"till|in which)\s+|\b(?:chat|conversation|convo|talk|discussion)s?\s+(?:about|on)\s+",
    re.IGNORECASE,
)
# A span that opens on the episode's name ("from the chat where X") or on a state ("to
# where things stood after X"): X is further on.
_EPISODE_HEAD = re.compile(
    r"^(?:the|that|our|this)\s+(?:\w+\s+)?(?:chat|conversation|convo|talk|discussion|session|"
    r"point|moment|time|day|bit|part)s?\b|^(?:things|everything|it|we|you)\s+(?:stood|was|were)\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
# A memory line's stamp: "[10:37 am on 27 June, 2023] Caroline: ...".
_STAMP = re.compile(r"^\[([^\]]*?) on ([^\]]*)\]\s*")


def event_span(text: str) -> str:
    """The part of ``text`` that tells the event: in the first sentence that places an
    event ("before X", "the chat where X"), what follows that word up to the sentence's
    end; ``text`` itself when no sentence does."""
    for sentence in _SENTENCES.split(text):
        rest = sentence
        m = None
        for _ in range(3):
            m = _EVENT_OPENS.search(rest)
            if m is None:
                break
            rest = rest[m.end() :]
            if not _EPISODE_HEAD.match(rest):
                break
        else:
            continue
        if m is not None and len(rest.split()) >= 2:
            return rest.strip(" .!?,;")
    return text


def context(lines: Sequence[str]) -> str:
    """What the model is shown of one chat: its date (from the lines' stamps) and the
    lines without their stamps, then the opening of the user's retelling."""
    date = ""
    shown = []
    for line in lines:
        m = _STAMP.match(line)
        if m:
            date = m.group(2)
            line = line[m.end() :]
        shown.append(" ".join(line.split())[:300])
    head = f"Part of a conversation from {date}:" if date else "Part of a conversation:"
    return (
        head
        + "\n"
        + "\n".join(shown)
        + '\n\nLater the user asked the assistant about that conversation: "'
    )


def continuation(request: str) -> str:
    """The text scored after each chat: the request's event, closing the quote."""
    return " " + event_span(request).strip() + '"'


def read(
    stage: ReaderStage,
    request: str,
    candidates: Mapping[int, Sequence[str]],
) -> tuple[int | None, dict[int, float]]:
    """The chat of ``candidates`` (commit -> its lines, nearest the request first) that
    the reader picks, or None when its best does not lead the second by the margin; also
    every candidate's score (summed log-probability, :data:`DECIMALS` kept)."""
    vids = sorted(v for v, lines in candidates.items() if lines)
    if len(vids) < 2:
        return None, {}
    tail = continuation(request)
    pairs = [(context(list(candidates[v])[: stage.lines]), tail) for v in vids]
    scores = {
        v: round(float(s), DECIMALS) for v, s in zip(vids, stage.model.loglik(pairs), strict=True)
    }
    order = sorted(vids, key=lambda v: (-scores[v], v))
    lead = scores[order[0]] - scores[order[1]]
    return (order[0] if lead >= stage.margin else None), scores
