"""A rollback or forget request read once into a structure: what it names, and what to
do with what it names.

:func:`parse` reads the request text once into a :class:`ParsedRequest`:

- **intent** (``undo`` / ``restore_to``, :func:`chronomem.query.detect_intent`
  over the request with its operator phrases taken out, so the "before" of "the chat
  right before X" is not read as an erasure cue);
- the **content clause**: the words that name the event, for retrieval; and the
  **excluded** clauses of a negation ("not the biking one", "rather than X");
- **operators**, applied after retrieval over the dated history (see
  :mod:`chronomem.resolve`):

  * ``offset``: N days / weeks / months before or after the named event ("the chat
    three days after X"): the episode nearest that day on that side;
  * ``step``: the next or previous episode ("the first chat after X", "the one right
    before X");
  * ``ordinal``: the n-th (or last) of the episodes that mention the content ("the
    second time X"); a knowledge-state phrasing ("when you didn't know yet that X",
    "before you found out X") is the first mention, undone;
  * a month or weekday that describes the event ("the April chat where X", "the
    Tuesday chat") filters the candidates instead of bounding the history;

- **cue words read with edit distance**: a misspelt request verb ("fogret", "delte",
  "rmeove") is respelt before any rule reads it, and chat shorthand ("plz", "convo",
  "abt", "u") is expanded. Only a word in a request verb's position is respelt (the
  request's start, after a politeness word, or before "the / that / it / to"), so
  content words a letter away from a verb ("remote", "forge") stay as they are
  (:mod:`chronomem.cues`);
- **small talk** around the request is dropped first (:func:`request_sentence`): the
  sentences of a chatty message that neither ask nor name structure, when the asking
  sentence names content of its own. A misspelt *content* word is read back later, against
  the store's vocabulary (:func:`chronomem.vocabulary.respell_unknown`);
- **evidence**: the content words that show the request names something at all
  (:attr:`ParsedRequest.evidence`; the words and phrases that name nothing are in
  :mod:`chronomem.nocontent`).

Nothing here touches a store: the structure is pure text, shown in a rollback plan so a
preview explains itself (:meth:`ParsedRequest.describe`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from chronomem import knowledge as kn
from chronomem import negation as ng
from chronomem import query as q
from chronomem import timeref as tr
from chronomem.cues import ASKS, CHAT_NOUN, respell
from chronomem.nocontent import FILLER, said_in_passing, without_asides
from chronomem.query import content_words

# -- operators -------------------------------------------------------------------------------

_CHAT = CHAT_NOUN
_N = (
    r"(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|"
    r"a few|couple of|few)"
)
_NUMBER = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2,
    "a few": 3, "few": 3,
}  # fmt: skip
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30}

# "three days after X", "a week before the chat where X", "the day after X".
_P_OFFSET = re.compile(
    rf"\b(?:(?:the\s+)?{_CHAT}\s+)?(?:{_N}\s+(?P<unit>days?|weeks?|months?)|the\s+"
    r"(?P<unit1>day|week))\s+(?P<dir>after|later than|before|earlier than|prior to)\s+"
    rf"(?:(?:the|that)\s+{_CHAT}\s+(?:where|when|about|in which)\s+|the\s+{_CHAT}\s+)?",
    re.IGNORECASE,
)
# "the first chat after X", "the next conversation after X", "the one right before X",
# "the previous chat before X", "the chat after the one where X".
# A relative clause about talking may sit between the chat and its direction ("the next
# time we talked after X", "the one we had just before X"); "time" is a chat only after
# "first / next / previous" ("the next time we spoke after X" is a step, no ordinal).
_TALKED = (
    r"(?:(?:that|when)\s+)?(?:we|i|you)\s+(?:had|talked|spoke|chatted|did|met)"
    r"(?:\s+(?:together|again))?\s+"
)
_P_STEP = re.compile(
    rf"\b(?:the\s+)?(?:(?P<which>first|next|following|previous|prior|last)\s+)?"
    rf"(?:{_CHAT}|(?(which)times?|(?!)))\s+(?:{_TALKED})?"
    r"(?:(?:right|just|directly|immediately)\s+)?(?P<dir>after|following|before|prior to)\s+"
    rf"(?:(?:the|that)\s+{_CHAT}\s+(?:where|when|about|in which|with)\s+|the\s+{_CHAT}\s+)?",
    re.IGNORECASE,
)
_ORDINALS = {
    "first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4,
    "4th": 4, "fifth": 5, "5th": 5, "last": -1, "latest": -1, "final": -1,
    "most recent": -1,
}  # fmt: skip
# "the second time X", "the last time we talked about X", "the first chat where X".
# "the" is required, and "for the first time" and "not the first time" are left alone:
# they describe one event ("James picking up drumsticks for the first time", "it was not
# the first time she lost it"), they count no mentions.
_P_ORDINAL = re.compile(
    r"(?<!\bfor )(?<!\bnot )\bthe\s+(?P<ord>first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|"
    r"last|latest|final|most recent)\s+(?:time|times|mention|chat|conversation|convo|session|talk)\b"
    r"(?:\s+(?:that|when|where|in which|about))?",
    re.IGNORECASE,
)
# "when Melanie first told me about X", "where camping first came up", "originally
# mentioned", "before Jon ever brought up X": an adverb of first time on a verb of telling
# or hearing counts mentions of X (the first one), whatever X is. "For the first time"
# and "her first game" describe the event and stay content; "ever" only after "before"
# ("the best thing he ever told me" is no ordinal).
_TELLING = (
    r"(?:told|tell|mentioned|mention|brought\s+up|bring\s+up|came\s+up|come\s+up|"
    r"talked\s+about|talk\s+about|spoke\s+(?:about|of)|said|raised|shared|heard|"
    r"learned|learnt|found\s+out|find\s+out|"
    # verbs of disclosing: "when Calvin first let on that X", "first opened up about X"
    r"let\s+on|let\s+slip|revealed|admitted|announced|confided|opened\s+up\s+about)"
)
_P_TOLD_VERB = re.compile(r"\b" + _TELLING + r"\b", re.IGNORECASE)
_P_FIRST_TOLD = re.compile(
    r"\b(?:(?P<adv>first|originally|initially)|(?<=\bbefore\s)(?:[\w']+\s+){0,6}?"
    r"(?P<ever>ever))\s+(?P<tell>" + _TELLING + r")\b"
    r"|\bthe\s+(?:very\s+)?(?:first|earliest)\s+mention(?:\s+of)?\b"
    r"|\bthe\s+earliest\s+(?:time|chat|conversation|convo|session|talk)"
    r"(?:\s+(?:that|when|where|in which|about))?\b",
    re.IGNORECASE,
)
# "the second rejection Joanna told me about", "the third injury he mentioned": an ordinal
# on a noun that a verb of telling follows counts the mentions of that noun (the noun
# stays content); "the second game of the season" counts nothing.
_P_ORDINAL_TOLD = re.compile(
    r"(?<!\bfor )\bthe\s+(?P<ord>first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last|"
    r"latest|final|most recent)\s+(?=(?:[\w'-]+\s+){1,3}?(?:(?:that|which)\s+)?(?:[\w']+\s+)"
    r"{1,2}?(?:has\s+|had\s+|have\s+)?(?P<tell>" + _TELLING + r")\b)",
    re.IGNORECASE,
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december",
)  # fmt: skip
# A month or weekday that describes the event's episode: "the April chat", "the chat in
# April where", "our Tuesday call".
_P_DESCRIBED = re.compile(
    r"\b(?P<word>"
    + "|".join(_MONTH_NAMES + _WEEKDAYS)
    + r")\s+"
    + _CHAT
    + r"\b|\b"
    + _CHAT
    + r"\s+(?:in|on|from|during|back in)\s+(?P<word2>"
    + "|".join(_MONTH_NAMES)
    + r"|(?:a\s+)?(?:"
    + "|".join(_WEEKDAYS)
    + r"))\b"
    # a month used as an adjective after a determiner: "the June health scare", "our May
    # trip" (a date after it, "the June 3 chat", is a day and stays a bound)
    + r"|\b(?:the|that|our|my|his|her|their)\s+(?P<word3>"
    + "|".join(_MONTH_NAMES)
    + r")(?=\s+(?!(?:of|and|or|to|through|until|till|on|in|"
    + _CHAT[3:-1]
    + r")\b)[a-z]{3,}\b)",
    re.IGNORECASE,
)
_P_NAME = re.compile(r"\b([A-Z][a-z][\w-]*)")
# Cheap tests for the words each operator needs.
_RELATIVE_WORDS = re.compile(r"\b(?:after|before|following|prior|later|earlier)\b", re.I)
_ORDINAL_WORDS = re.compile(
    r"\b(?:first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last|latest|final|recent)\b", re.I
)
# "when he lost his keys -- not the first time, the time he lost them again": a ruled-out
# ordinal names the mention it passes over, and what the writer means instead is a later
# one ("again", "the next / other / later one"): the mention after it.
_P_NOT_ORDINAL = re.compile(
    r"\bnot\s+the\s+(?P<ord>first|1st|second|2nd|third|3rd|fourth|4th)\s+"
    r"(?:time|one|mention|chat|conversation|convo|session|talk)\b"
    r"(?=.*?\b(?:again|the\s+(?:next|other|later)\s+(?:time|one|mention|chat)|"
    r"(?:a|the)\s+later\s+(?:time|one|mention|chat))\b)",
    re.IGNORECASE,
)
_FIRST_WORDS = re.compile(r"\b(?:first|originally|initially|ever|earliest)\b", re.I)
_CALENDAR_WORDS = re.compile(r"\b(?:" + "|".join(_MONTH_NAMES + _WEEKDAYS) + r")\b", re.I)
# A greeting before a time phrase ("happy new year!"): the time is no bound.
_GREETED = re.compile(r"\b(?:happy|merry)\s+$", re.IGNORECASE)


@dataclass(frozen=True)
class Operator:
    """One step applied over the dated history after retrieval.

    ``kind``: ``offset`` (``n`` days, negative = before), ``step`` (``n`` episodes,
    +1 next / -1 previous), ``ordinal`` (``n``-th mention, -1 the last) or ``weekday``
    (``n`` = 0 Monday .. 6 Sunday: the event's episode was on that day). A month that
    describes the event is carried as :attr:`ParsedRequest.time` (a month filter)."""

    kind: str
    n: int
    span: str


@dataclass(frozen=True)
class ParsedRequest:
    """A request read once (see the module docstring)."""

    text: str  # the request as given
    normal: str  # shorthand expanded, misspelt request verbs respelt
    intent: q.Intent
    clause: str  # the words naming the event (request phrasing kept: retrieval strips it)
    excluded: tuple[str, ...] = ()  # clauses a negation rules out
    operators: tuple[Operator, ...] = ()
    time: tr.TimeRef | None = None  # a named time (bound or month filter), as timeref reads it
    respelt: tuple[tuple[str, str], ...] = ()
    # words the memory never wrote, with the related words it holds added to the clause
    # (chronomem.vocabulary.read_related)
    related: tuple[tuple[str, tuple[str, ...]], ...] = ()
    knowledge: bool = False  # "when you didn't know yet that X": undo X's first mention

    @functools.cached_property
    def content(self) -> tuple[str, ...]:
        """Content words of the clause (stopwords and request vocabulary removed)."""
        return content_words(self.clause)

    @functools.cached_property
    def names(self) -> frozenset[str]:
        """Lower-cased words of the clause written as names (a capital inside a sentence:
        "a puppy called Toby", "Phuket"), the words that identify a topic or a fact."""
        return frozenset(
            m.group(1).lower()
            for m in _P_NAME.finditer(self.clause)
            if not re.search(r"(?:^|[.!?:;\"]\s*)$", self.clause[: m.start(1)])
        )

    @functools.cached_property
    def compounds(self) -> frozenset[tuple[str, str]]:
        """Pairs of content words written next to each other in the clause ("assistant
        manager", "graphics card"): a noun compound names its topic only whole."""
        words = [w.strip(".,;:!?'\"()").lower() for w in self.clause.split()]
        content = set(self.content)
        return frozenset(
            (a, b) for a, b in zip(words, words[1:], strict=False) if a in content and b in content
        )

    @property
    def named(self) -> tuple[str, ...]:
        """Content words that are not filler: what must match for the request to act."""
        return tuple(t for t in self.content if t not in FILLER)

    @functools.cached_property
    def evidence(self) -> tuple[str, ...]:
        """The content words that count as evidence that the request names something:
        none of :data:`chronomem.nocontent.NO_CONTENT`, none from a courtesy formula or an
        aside about the listener (:func:`chronomem.nocontent.without_asides`). The confidence gates match these; retrieval reads :attr:`content`."""
        if not any(not said_in_passing(t) for t in self.content):
            return ()
        return tuple(
            t for t in content_words(without_asides(self.clause)) if not said_in_passing(t)
        )

    @property
    def names_content(self) -> bool:
        """Whether an :attr:`evidence` word is left: a request without one names nothing
        and is refused."""
        return bool(self.evidence)

    def operator(self, kind: str) -> Operator | None:
        return next((o for o in self.operators if o.kind == kind), None)

    def describe(self) -> dict[str, Any]:
        """The parse as plain data, for a plan's evidence."""
        out: dict[str, Any] = {"intent": self.intent, "clause": self.clause}
        if self.excluded:
            out["excluded"] = list(self.excluded)
        if self.operators:
            out["operators"] = [{"kind": o.kind, "n": o.n, "words": o.span} for o in self.operators]
        if self.knowledge:
            out["knowledge_state"] = True
        if self.respelt:
            out["respelt"] = [list(p) for p in self.respelt]
        if self.related:
            out["related"] = {w: list(ws) for w, ws in self.related}
        if self.time is not None:
            out["time"] = {"kind": self.time.kind, "words": self.time.span}
        return out


def _number(text: str | None) -> int:
    if not text:
        return 1
    text = text.lower()
    return int(text) if text.isdigit() else _NUMBER.get(text, 1)


def _cut(text: str, m: re.Match[str]) -> str:
    return (text[: m.start()] + " " + text[m.end() :]).strip()


def parse(text: str) -> ParsedRequest:
    """Read ``text`` once into a :class:`ParsedRequest`."""
    raw = text or ""
    normal, respelt = respell(raw)
    work = request_sentence(" ".join(normal.split()))
    operators: list[Operator] = []
    excluded: list[str] = []

    low = work.lower()
    # A ruled-out ordinal before any other negation: its "not" counts mentions, it rules
    # out no clause.
    m = _P_NOT_ORDINAL.search(work) if "not" in low else None
    passed_over = m is not None
    if m:
        operators.append(Operator("ordinal", _ORDINALS[m.group("ord").lower()] + 1, m.group(0)))
        work = _cut(work, m)
        low = work.lower()
    # Negation first: the ruled-out clause leaves the text every later rule reads.
    split = ng.split_negation(work) if ng.NEGATION_WORDS.search(low) else None
    if split is not None:
        work, ruled_out = split
        excluded.append(ruled_out)

    knowledge = False
    # Each operator's pattern runs only when a word it needs is there (most requests
    # carry none, and the resolver reads every request).
    m = kn.P_KNOWLEDGE.search(work) if kn.KNOW_WORDS.search(work) else None
    if m:
        knowledge = True
        operators.append(Operator("ordinal", 1, m.group(0)))
        work = _cut(work, m)

    relative = _RELATIVE_WORDS.search(work) is not None
    m = _P_OFFSET.search(work) if relative else None
    if m:
        unit = (m.group("unit") or m.group("unit1") or "day").lower().rstrip("s")
        days = (_number(m.group("n")) if m.group("unit") else 1) * _UNIT_DAYS[unit]
        sign = -1 if m.group("dir").lower() in ("before", "earlier than", "prior to") else 1
        operators.append(Operator("offset", sign * days, m.group(0).strip()))
        work = _cut(work, m)
    else:
        m = _P_STEP.search(work) if relative else None
        if m and _is_step(m):
            back = m.group("dir").lower() in ("before", "prior to")
            operators.append(Operator("step", -1 if back else 1, m.group(0).strip()))
            work = _cut(work, m)

    if not knowledge and not passed_over:
        m = _P_ORDINAL.search(work) if _ORDINAL_WORDS.search(work) else None
        if m:
            operators.append(Operator("ordinal", _ORDINALS[m.group("ord").lower()], m.group(0)))
            work = _cut(work, m)
            # "the second time Melanie brought up camping": the verb of telling names no
            # content, and as a rare word it would decide which commits are mentions
            # (the one chat where something was "brought" in).
            told = _P_TOLD_VERB.search(work, m.start())
            if told:
                work = " ".join((work[: told.start()] + " " + work[told.end() :]).split())
        else:
            m = _P_ORDINAL_TOLD.search(work)
            if m:
                # the ordinal and its verb of telling go; the noun between stays
                operators.append(Operator("ordinal", _ORDINALS[m.group("ord").lower()], m.group(0)))
                tell = m.start("tell"), m.end("tell")
                work = " ".join(
                    (work[: m.start()] + work[m.end() : tell[0]] + work[tell[1] :]).split()
                )
                m = None
            else:
                m = _P_FIRST_TOLD.search(work) if _FIRST_WORDS.search(work) else None
            if m:
                # The verb of telling goes with its adverb: it names no content, and
                # as the rarest word of the clause it would decide which commits
                # count as mentions. "before" stays, so "before Jon ever mentioned X"
                # is still an undo.
                start = m.start("ever") if m.group("ever") else m.start()
                operators.append(Operator("ordinal", 1, work[start : m.end()]))
                work = " ".join((work[:start] + " " + work[m.end() :]).split())

    time = tr.read(work)
    at = work.find(time.span) if time is not None and time.span else -1
    if at > 0 and _GREETED.search(work[:at]):
        # "happy new year!", "merry Christmas": a greeting, not a date the request names
        time = None
    m = _P_DESCRIBED.search(work) if _CALENDAR_WORDS.search(work) else None
    if m and not _verb_may(work, m):
        word = (m.group("word") or m.group("word2") or m.group("word3") or "").lower().split()[-1]
        if word in _WEEKDAYS:
            operators.append(Operator("weekday", _WEEKDAYS.index(word), m.group(0)))
            time = None if time is not None and time.what == "weekday" else time
        elif time is None or time.what == "month":
            # The month describes the event's episode ("the April chat where X"): a
            # filter, never a bound. A day ("the 3 July chat") stays the bound it is.
            month = _MONTH_NAMES.index(word) + 1
            year = time.value[1] if time is not None else None
            time = tr.TimeRef("month", "month", (month, year), True, m.group(0))

    # Intent: cue words of the request with the operator phrases taken out. A request
    # that corrects itself ("undo the chess club chat? no, the one about the tournament")
    # may keep its verb in the ruled-out clause: it still asks for what the verb says.
    # A taking back that opens on the verb and corrects only the description ("restore to
    # when X -- no wait, I mean when Y afterwards") keeps that verb too: an adverb of the
    # new description ("afterwards") is no request of its own. One that opens on a verb
    # of its own ("undo X -- no, restore to Y") asks for what that verb says.
    cue_text = work
    if (
        excluded
        and not q.opens_with_request(work)
        and (not q.names_intent(work) or q.opens_with_request(excluded[0]))
    ):
        cue_text = f"{excluded[0]} {work}"
    intent: q.Intent = "undo" if knowledge else q.detect_intent(cue_text)
    return ParsedRequest(
        text=raw,
        normal=normal,
        intent=intent,
        clause=work,
        excluded=tuple(excluded),
        operators=tuple(operators),
        time=time,
        respelt=tuple(respelt),
        knowledge=knowledge,
    )


# -- the request inside a chatty message ---------------------------------------------------

# A sentence ends at . ! or ? before a space (not inside "St. Louis": the next word of a
# new sentence is not checked, so a title's period splits too; the rule below only drops
# a piece that asks nothing and names no operator, so a wrong split costs little).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Words that place something in the history's order: a sentence holding one may say
# which side of the event goes ("Nothing after that needs to stay"), so it is kept.
_ORDER_WORDS = re.compile(
    r"\b(?:after|before|since|later|earlier|following|prior|onwards?|rest)\b", re.IGNORECASE
)


_NEGATED = re.compile(r"\b(?:not|rather than|instead of)\b", re.IGNORECASE)


def _names_structure(text: str) -> bool:
    """Whether ``text`` holds what the operators read: a negation, a knowledge state, an
    offset or step, an ordinal or first mention, a time, or a month or weekday that
    describes the event (the patterns :func:`parse` applies)."""
    if _NEGATED.search(text):
        return True
    if ng.names_negation(text) or any(p.search(text) for p in (kn.P_KNOWLEDGE, _P_OFFSET, _P_STEP)):
        return True
    if _P_ORDINAL.search(text) or _P_FIRST_TOLD.search(text) or _P_DESCRIBED.search(text):
        return True
    return tr.read(text) is not None


ASK_MIN_WORDS = 2  # content words the asking sentence must name for small talk to go
# The asking sentence points back at the sentence before it ("... keep everything through
# that msg", "... up to where Evan owned up to it"): that sentence holds the event.
_POINTS_BACK = re.compile(
    r"\b(?:that|this)\s+(?:msg|message|chat|conversation|convo|talk|bit|story|part|one)\b"
    r"(?!\s+(?:where|when|about|with|in\s+which|that|who|of)\b)"
    r"|\b(?:to|about|on|of|with|forget|undo|drop|remove|erase|delete)\s+it\b",
    re.IGNORECASE,
)
# A sentence that opens by taking back the one before it ("undo the chess club chat? no,
# the one about the tournament") is part of the request, whatever else it names.
_OPENS_CORRECTION = re.compile(r"^\s*(?:no|nope|nah|wait|sorry|actually)\b\s*[,!.\-]", re.I)


# A sentence that goes on describing what the request points at, rather than the writer's
# day: a noun phrase with no verb of its own ("The true story about the trans girl.", "the
# one where she showed me her bowls") or a copula pointing back ("It was the chat where
# ...", "That was when ..."). Small talk is a clause with a subject and a verb ("The rain
# hasn't let up", "My sister's staying with me").
_REFERENT_OPEN = re.compile(
    r"^\s*(?:(?:it|that|this)(?:\s+(?:was|is)|'s)\s+(?:the|that|when|where|about)\b"
    r"|(?:i\s+mean\s+)?(?:the|that|those)\s)",
    re.IGNORECASE,
)
# Where a noun phrase's head ends and its modifiers begin (a relative clause or a
# preposition): a verb after that point belongs to the description.
_HEAD_END = re.compile(
    r"\b(?:where|when|who|whom|which|that|about|with|of|from|in|on|at|for|to|during|"
    r"after|before|while)\b",
    re.IGNORECASE,
)
# The finite verbs (and contractions) a sentence of small talk carries in its head part.
_FINITE = re.compile(
    r"\b(?:is|are|was|were|am|be|been|being|has|have|had|hasn't|haven't|hadn't|isn't|"
    r"aren't|wasn't|weren't|do|does|did|don't|doesn't|didn't|will|would|can|could|"
    r"should|must|may|might|won't|can't|couldn't|wouldn't|keeps?|gets?|got|goes|went|"
    r"makes?|made|looks?|feels?|seems?|needs?)\b|\w'(?:s|re|m|ve|ll|d)\b|\b\w{3,}ed\b",
    re.IGNORECASE,
)


def _describes_referent(sentence: str) -> bool:
    """Whether ``sentence`` describes the event the request names (see
    :data:`_REFERENT_OPEN`): it is kept with the request, as content."""
    m = _REFERENT_OPEN.match(sentence)
    if m is None:
        return False
    if not m.group(0).lower().lstrip().startswith(("the", "that ", "those", "i mean")):
        return True  # "It was the one where ...": a copula pointing back
    rest = sentence[m.end() :]
    cut = _HEAD_END.search(rest)
    head = rest[: cut.start()] if cut else rest
    return _FINITE.search(head) is None


def request_sentence(text: str) -> str:
    """``text`` without the small talk around its request: in a message of several
    sentences, the sentences that ask nothing (no request verb) and name no structure
    (no negation, count, offset or time) are dropped when another sentence both asks and
    names content of its own ("Long week here, the rain hasn't let up. Anyway, could you
    undo the chat where Mel told me about the concert? Thanks!"); so is a lead-in before a
    colon in the asking sentence ("Quick favour though: please ..."). A message whose
    asking sentence names fewer than :data:`ASK_MIN_WORDS` content words ("not the museum day, the park one. undo from
    that chat") is kept whole: its content is in the other sentence."""
    parts = [p for p in _SENTENCE_END.split(text) if p.strip()]
    if len(parts) < 2:
        return text
    ask = None
    for i, part in enumerate(parts):
        m = ASKS.search(part)
        if m is None:
            continue
        lead = part.rfind(":", 0, m.start())
        lead = max(lead, part.rfind(";", 0, m.start()))
        if lead >= 0 and not _names_structure(part[:lead]):
            part = part[lead + 1 :].strip()
        # Two content words at least: a lone one ("undo what I said and move on") may be
        # an idiom, and the sentences around it are then what the gates must read.
        if sum(w not in FILLER for w in content_words(part)) >= ASK_MIN_WORDS:
            ask = i
            parts[i] = part
            break
    if ask is None:
        return text
    kept = [
        part
        for i, part in enumerate(parts)
        if i == ask
        or ASKS.search(part)
        or _ORDER_WORDS.search(part)
        or _names_structure(part)
        or (i == ask + 1 and _OPENS_CORRECTION.match(part))
        or (i == ask - 1 and _POINTS_BACK.search(parts[ask]))
        or _describes_referent(part)
        or not content_words(part)
    ]
    return " ".join(kept)


def _verb_may(text: str, m: re.Match[str]) -> bool:
    """ "may" / "march" as a verb ("you may call", "march on"): a month only after "the",
    "our", "that" or a preposition."""
    word = (m.group("word") or "").lower()
    if word not in ("may", "march"):
        return False
    return not re.search(
        r"\b(?:the|our|that|this|in|from|during|of)\s*$", text[: m.start()].lower()
    )


def _is_step(m: re.Match[str]) -> bool:
    """A step phrase names an episode next to another: "the first chat after X", "the
    one right before X", "the chat after the one where X"; not "everything after"."""
    whole = m.group(0).lower()
    if m.group("which"):
        return m.group("which").lower() != "last" or "before" in whole
    # "the one right before X", "the chat after the one where X": a chat noun, then
    # a second one or a qualifier ("right", "just").
    return bool(re.search(r"\b(?:right|just|directly|immediately)\b", whole)) or bool(
        re.search(rf"(?:after|before|following|prior to)\s+(?:the|that)\s+{_CHAT}\b", whole)
    )
