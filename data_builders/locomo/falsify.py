"""False recall statements (protocol 3, docs/metrics.md: recall probes).

A LoCoMo observation ("Melanie painted a lake sunrise last year ...") becomes a false
statement by swapping one of its words for a word of the same kind (a noun after a
determiner, singular or plural as the original, with the article's a/an kept right; a
name; a number, weekday or month) that the statement's subject does use elsewhere: it
occurs in a turn the subject speaks or that names them, but nowhere in the statement's
own session (neither its turns nor its observations). So the swapped-in word is said
with the subject as a true statement's words are (a rule "No when a word never occurs
with the subject" cannot tell them apart), and it is false where it stands: the session
the statement is about never says it. The swapped-out word and its replacement both
occur in the conversation's turns (the public writes). Which word goes and which comes
in is fixed by a seeded hash.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chronobench.hashing import stable_hash
from chronobench.text import CONTENT_STOPWORDS, stem

_TOKEN = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|\d+")
#: Words never swapped (they carry tense or hedging, not the fact).
_KEEP = frozenset("also just really very currently recently later last next".split())
#: A word right after one of these (or after one of these and one more word) is taken
#: for a noun: a swap replaces a noun by a noun, so the false statement stays grammatical
#: and only its content says it is false.
_DETERMINERS = frozenset(
    "a an the her his my your their our its this that these those some any every".split()
)
_NUMBERS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve twenty hundred".split()
)
_DAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)


@dataclass(frozen=True)
class Swap:
    """A false twin of one statement: its text, and the word that was replaced."""

    statement: str
    original: str
    replacement: str


def _class(low: str) -> str:
    if low.isdigit() or low in _NUMBERS:
        return "number"
    if low in _DAYS:
        return "day"
    if low in _MONTHS:
        return "month"
    return "word"


def _noun_positions(tokens: Sequence[str]) -> set[int]:
    """Indexes of tokens that follow a determiner (directly or after one word)."""
    out: set[int] = set()
    for i, tok in enumerate(tokens):
        if tok.lower() in _DETERMINERS:
            out.add(i + 1)
            if i + 2 < len(tokens) and tokens[i + 2].lower() not in CONTENT_STOPWORDS:
                out.add(i + 2)
    return {i for i in out if i < len(tokens)}


class Falsifier:
    """False twins for the observations of one conversation.

    ``turns``: ``(speaker, text)`` of every turn (the stream's public text);
    ``observations``: ``(speaker, text)`` of every observation; ``speakers``: the two
    names. Built once per conversation. (The battery asks at most one false statement per
    replacement word, data_builders/battery.py: a word in many would mark them.)"""

    def __init__(
        self,
        turns: Sequence[tuple[str, str]],
        observations: Sequence[tuple[str, str]],
        speakers: Sequence[str],
        *,
        seed: int,
        stream_id: str,
    ) -> None:
        self.seed, self.stream_id = seed, stream_id
        self.names = {w.lower() for s in speakers for w in s.split()}
        df: Counter[str] = Counter()
        nounish: Counter[str] = Counter()
        proper: Counter[str] = Counter()
        for _, text in turns:
            toks = _TOKEN.findall(text)
            df.update({t.lower() for t in toks})
            for i in _noun_positions(toks):
                nounish[toks[i].lower()] += 1
            for i, t in enumerate(toks):
                if i > 0 and t[:1].isupper() and toks[i - 1][-1:] not in ".!?":
                    proper[t.lower()] += 1
        self.df, self.nounish, self.proper = df, nounish, proper
        # Per subject: the stems of every turn and observation it occurs in.
        self._with: dict[str, set[str]] = {}
        for subject in speakers:
            first = subject.split()[0].lower() if subject.split() else subject.lower()
            stems: set[str] = set()
            for speaker, text in [*turns, *observations]:
                toks = [t.lower() for t in _TOKEN.findall(text)]
                if speaker == subject or first in toks:
                    stems.update(stem(t) for t in toks)
            self._with[subject] = stems

    def _content(self, low: str) -> bool:
        # A speaker's nickname ("Mel" for Melanie) counts as the speaker's name.
        return (
            (len(low) >= 3 or low.isdigit())
            and low not in CONTENT_STOPWORDS
            and not any(n.startswith(low) or low.startswith(n) for n in self.names)
            and low not in _KEEP
        )

    def _kind(self, tok: str, noun_spot: bool, initial: bool) -> str | None:
        """What a replacement must be for ``tok`` (None: not swappable)."""
        low = tok.lower()
        if not self._content(low) or self.df.get(low, 0) == 0:
            return None
        cls = _class(low)
        if cls != "word":
            return cls
        if tok[:1].isupper() and self.proper.get(low, 0) > 0:
            return "name" if not initial else None
        if noun_spot and self.nounish.get(low, 0) > 0:
            return "noun-plural" if low.endswith("s") else "noun"
        return None

    def _cands(self, kind: str) -> list[str]:
        if kind in ("number", "day", "month"):
            return [w for w in self.df if _class(w) == kind]
        if kind == "name":
            return [w for w in self.proper if _class(w) == "word"]
        plural = kind == "noun-plural"
        return [
            w
            for w in self.nounish
            if w.endswith("s") == plural and self.proper.get(w, 0) == 0 and _class(w) == "word"
        ]

    def twin(
        self, fact_id: str, statement: str, subject: str, session: Iterable[str] = ()
    ) -> Swap | None:
        """The false twin of ``statement`` about ``subject``, or None when no word can be
        swapped under the rules above. ``session``: the texts of the statement's session
        (its turns and observations); the replacement never occurs there."""
        used = self._with.get(subject, set())
        banned = {stem(t.lower()) for text in session for t in _TOKEN.findall(text)}
        matches = list(_TOKEN.finditer(statement))
        toks = [m.group(0) for m in matches]
        nouns = _noun_positions(toks)
        spots = [
            (i, kind)
            for i, tok in enumerate(toks)
            if (kind := self._kind(tok, i in nouns, i == 0)) is not None
        ]
        own = {stem(t.lower()) for t in toks}
        # The most specific word (rarest in the conversation) carries the fact.
        for i, kind in sorted(spots, key=lambda s: (self.df[toks[s[0]].lower()], s[0])):
            article = toks[i - 1].lower() if i > 0 else ""
            cands = [
                w
                for w in self._cands(kind)
                if self._content(w)
                and "'" not in w
                and stem(w) in used
                and stem(w) not in banned
                and stem(w) not in own
                and _article_fits(article, w)
            ]
            if not cands:
                continue
            pick = min(cands, key=lambda w: (stable_hash(self.seed, self.stream_id, fact_id, w), w))
            original = toks[i]
            word = pick
            if original[:1].isupper() or kind == "name":
                word = word[:1].upper() + word[1:]
            m = matches[i]
            text = statement[: m.start()] + word + statement[m.end() :]
            return Swap(statement=text, original=original, replacement=word)
        return None


def _article_fits(article: str, word: str) -> bool:
    # "a" before a consonant sound, "an" before a vowel (by spelling: close enough for
    # the nouns of a chat); any other preceding word fits every candidate.
    if article == "a":
        return word[:1] not in "aeiou"
    if article == "an":
        return word[:1] in "aeiou"
    return True


def conversation_texts(
    rec: dict[str, Any], sessions: Iterable[int], observations: Any
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(speaker, text)`` of every turn and every observation of ``sessions``."""
    conv = rec.get("conversation", {})
    turns = [
        (str(t.get("speaker", "")), str(t.get("text", "")))
        for n in sessions
        for t in conv.get(f"session_{n}", []) or []
        if isinstance(t, dict)
    ]
    obs = [(sp, text) for n in sessions for sp, text, _ in observations(rec, n)]
    return turns, obs
