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
  content words a letter away from a verb ("remote", "forge") stay as they are.

Nothing here touches a store: the structure is pure text, shown in a rollback plan so a
preview explains itself (:meth:`ParsedRequest.describe`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from chronomem import query as q
from chronomem import timeref as tr
from chronomem.words import RETRIEVAL_STOPWORDS

# -- respelling ------------------------------------------------------------------------------

# Request verbs a misspelling is read back to (edit distance 1; 2 from seven letters on).
CUE_VERBS = (
    "forget",
    "remove",
    "delete",
    "erase",
    "undo",
    "revert",
    "discard",
    "rollback",
    "restore",
    "return",
)
# Chat shorthand -> the words the rules read.
SHORTHAND = {
    "plz": "please",
    "pls": "please",
    "pleas": "please",
    "u": "you",
    "ur": "your",
    "abt": "about",
    "bout": "about",
    "convo": "conversation",
    "convos": "conversations",
    "n": "and",
    "rite": "right",
    "cn": "can",
    "cud": "could",
    "b4": "before",
    "thx": "thanks",
    "tho": "though",
    "msg": "message",
    "rollbak": "rollback",
    "wat": "what",
    "sed": "said",
}
# Words after which a request verb stands ("plz fogret", "can you delte").
_VERB_BEFORE = frozenset(
    "please can could would you just ok okay so hey hi and also then now pls kindly "
    "i i'd want".split()
)
# Words a request verb is followed by ("fogret the chat", "revrt to").
_VERB_AFTER = frozenset(
    "the that this it everything anything all what my our to about back from".split()
)


def _distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment edit distance of ``a`` and ``b`` (insertions, deletions,
    substitutions, adjacent transpositions), or ``limit + 1`` once it exceeds ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


@functools.lru_cache(maxsize=4096)
def cue_verb(word: str) -> str | None:
    """The request verb ``word`` misspells (None: none, or it is that verb already)."""
    w = word.lower()
    if len(w) < 4 or not w.isalpha() or w in CUE_VERBS:
        return None
    best: tuple[int, str] | None = None
    for verb in CUE_VERBS:
        if w[0] != verb[0]:
            continue
        limit = 2 if len(verb) >= 7 else 1
        d = _distance(w, verb, limit)
        if d <= limit and (best is None or d < best[0]):
            best = (d, verb)
    return None if best is None else best[1]


_SHORTHAND_RE = re.compile(
    r"(?<![\w'])(?:" + "|".join(sorted(SHORTHAND, key=len, reverse=True)) + r")(?![\w'])",
    re.IGNORECASE,
)
# Words that could misspell a request verb: the verbs' first letters, four letters on.
_CANDIDATE = re.compile(
    r"(?<![\w'])[" + "".join(sorted({v[0] for v in CUE_VERBS})) + r"][a-z]{3,10}(?![\w'])",
    re.IGNORECASE,
)
_LAST_WORD = re.compile(r"([\w']+)\W*$")
_NEXT_WORD = re.compile(r"^\W*([\w']+)")


def respell(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with chat shorthand expanded and misspelt request verbs respelt, and the
    ``(was, now)`` pairs changed. A word is read as a verb only in a verb's position:
    the request's first word, after a politeness word, or before "the / that / to"."""
    changed: list[tuple[str, str]] = []

    def short(m: re.Match[str]) -> str:
        now = SHORTHAND[m.group(0).lower()]
        changed.append((m.group(0), now))
        return now

    text = _SHORTHAND_RE.sub(short, text or "")
    out: list[str] = []
    at = 0
    for m in _CANDIDATE.finditer(text):
        verb = cue_verb(m.group(0))
        if verb is None:
            continue
        before = _LAST_WORD.search(text, 0, m.start())
        after = _NEXT_WORD.search(text[m.end() :])
        first = before is None
        if not (
            first
            or before.group(1).lower() in _VERB_BEFORE  # type: ignore[union-attr]
            or (after is not None and after.group(1).lower() in _VERB_AFTER)
        ):
            continue
        changed.append((m.group(0), verb))
        out.append(text[at : m.start()] + verb)
        at = m.end()
    out.append(text[at:])
    return "".join(out), changed


# -- operators -------------------------------------------------------------------------------

_CHAT = r"(?:chat|conversation|convo|session|talk|discussion|call|one)"
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
_P_STEP = re.compile(
    rf"\b(?:the\s+)?(?:(?P<which>first|next|following|previous|prior|last)\s+)?{_CHAT}\s+"
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
# "the" is required, and "for the first time" is left alone: "James picking up drumsticks
# for the first time" describes one event, it does not count mentions.
_P_ORDINAL = re.compile(
    r"(?<!\bfor )\bthe\s+(?P<ord>first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last|latest|"
    r"final|most recent)\s+(?:time|times|mention|chat|conversation|convo|session|talk)\b"
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
    r"learned|learnt|found\s+out|find\s+out)"
)
_P_FIRST_TOLD = re.compile(
    r"\b(?:(?P<adv>first|originally|initially)|(?<=\bbefore\s)(?:[\w']+\s+){0,3}?"
    r"(?P<ever>ever))\s+(?P<tell>" + _TELLING + r")\b"
    r"|\bthe\s+(?:very\s+)?(?:first|earliest)\s+mention(?:\s+of)?\b"
    r"|\bthe\s+earliest\s+(?:time|chat|conversation|convo|session|talk)"
    r"(?:\s+(?:that|when|where|in which|about))?\b",
    re.IGNORECASE,
)
# "when you didn't know yet that X", "before you found out X", "back before you knew X".
_P_KNOWLEDGE = re.compile(
    r"\b(?:(?:before|until|till)\s+(?:you|i)\s+(?:ever\s+)?(?:knew|learned|learnt|found out|"
    r"heard|were told|got told|had heard|knew anything)(?:\s+(?:about|of|that))?|"
    r"(?:when|where|back when|the point when|the time when)\s+(?:you|i)\s+(?:still\s+)?"
    r"(?:didn'?t|did not|don'?t|do not|had not|hadn'?t)\s+(?:yet\s+)?(?:know|knew|hear|heard|"
    r"learn|learned|have heard|find out|found out)(?:\s+(?:yet|anything))?"
    r"(?:\s+(?:about|of|that))?(?:\s+yet)?|"
    r"(?:when|where)\s+you\s+had\s+no\s+idea(?:\s+(?:about|of|that))?)\b",
    re.IGNORECASE,
)
# Negation and contrast. The ruled-out part names an episode ("the biking one", "the
# pottery workshop chat") so that a "not" inside content ("I'm not sure") is left alone.
_P_NOT_FIRST = re.compile(
    r"^\s*(?:no,?\s+)?not\s+(?P<x>(?:the|that|my)\s+[^,;.]*?\b" + _CHAT + r"s?\b[^,;.]*?)"
    r"\s*(?:,|;|\s-+|\s+but)\s+(?P<y>.+)$",
    re.IGNORECASE,
)
_P_NOT_LAST = re.compile(
    r"^(?P<y>.+?)\s*(?:,|;|\s-+)?\s+(?:and\s+|but\s+)?not\s+(?P<x>(?:the|that|my)\s+[^,;.]*?"
    r"\b" + _CHAT + r"s?\b[^,;.]*?)\s*[.!]?\s*$",
    re.IGNORECASE,
)
_P_RATHER = re.compile(
    r"^(?P<y>.+?)\s*,?\s+(?:rather than|instead of)\s+(?P<x>[^,;.]+?)(?P<rest>[,;.].*)?$",
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
# Cheap tests for the words each operator needs.
_KNOW_WORDS = re.compile(
    r"\b(?:knew|know|learn\w*|found out|find out|heard|hear|told|idea)\b", re.I
)
_RELATIVE_WORDS = re.compile(r"\b(?:after|before|following|prior)\b", re.I)
_ORDINAL_WORDS = re.compile(
    r"\b(?:first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last|latest|final|recent)\b", re.I
)
_FIRST_WORDS = re.compile(r"\b(?:first|originally|initially|ever|earliest)\b", re.I)
_CALENDAR_WORDS = re.compile(r"\b(?:" + "|".join(_MONTH_NAMES + _WEEKDAYS) + r")\b", re.I)
# Words that name no memory content wherever they stand: greetings, politeness, "mind",
# and times said in passing ("earlier", "yesterday"). Retrieval still reads them; they
# never count as evidence that a request names something ("hi, undo what I said before").
FILLER = frozenset(
    """hi hello hey hiya morning evening afternoon good thanks thank thx cheers please
    plz pls kindly mind sorry okay ok sure yeah yes no hmm um uh well actually really
    maybe kind sort bit little lot lots today yesterday tonight earlier recently lately
    now ago last latest recent previous first second next time times day days week weeks
    month months year said say saying told tell telling mentioned mention talked talk
    thing things something stuff bit part parts info information whatever way like
    quick scratch done much also again think thinking thought one ones bunch honestly
    anyway hope""".split()
)
# Words that, with FILLER, leave a request naming nothing when no other word is left.
# Beside a named topic they stay evidence words as before, so a request that names
# something is matched exactly as it was. One class a line, so a new word joins the
# class it belongs to (written on the development probes, docs/nl_parse.md):
NO_CONTENT = FILLER | frozenset(
    # interjections and chat shorthand
    """oops oopsie lol haha ugh wow omg btw wait whoa huh eh meh argh oh aw aww erm umm
    uhh ahem gah gosh tbh ngl fwiw nvm xoxo ty listen"""
    # words that point at something without naming it ("the other thing too")
    """ other else another too either same"""
    # the act of telling (what was told is the content, not the act)
    """ gave give given giving shared share sharing sent send"""
    # the memory's own units and verbs ("the newest memories", "the last entry", "two
    # steps", "clear out the recent update")
    """ update updates entry entries step steps note notes record records edit edits
    version versions newest oldest clear out"""
    # counts ("two steps", "the last three")
    """ two three four five six seven eight nine ten"""
    # ways to address the listener ("hey buddy")
    """ buddy pal dude bro"""
    # courtesy that is rarely a topic ("much appreciated", "no worries", "regards")
    """ appreciate appreciated worries bother excuse possibly mate regards greetings ahh ta
    cool trouble request requests"""
    # courtesy in other languages, and terms of endearment ("gracias amigo", "thanks hon")
    """ gracias amigo amiga danke merci beaucoup grazie ciao hon honey sweetie luv"""
    # apologies and hedges around the request itself ("apologies", "is it possible to",
    # "I was wondering whether")
    """ apologies possible wondering whether rather though"""
    # chat affirmations and negations ("okie dokie", "yeah, nah")
    """ okie dokie nah nope yep yup alright righto"""
    # the request correcting itself: a slip, a change of mind, what to disregard
    """ bad mistake mistakes wrong ignore change changes changed mean meant"""
    # units of time with no date ("a minute ago")
    """ minute minutes hour hours moment while"""
    # the act of writing something (what was written is the content, not the act)
    """ wrote typed typing message messages put input reply replies"""
    # vague amounts
    """ couple few several most"""
    # what is left of a contraction once its apostrophe splits it ("don't" -> don, t;
    # "I'd" -> d)
    """ don doesn didn isn wasn won couldn wouldn shouldn aren weren haven hasn hadn
    t d m ll ve re s""".split()
)
# Courtesy formulas made of words that are topics elsewhere ("my best friend", "I love
# hiking"): only the whole phrase names nothing, so only the phrase is set aside when
# asking whether a request names content.
_COURTESY = re.compile(
    r"\b(?:hope (?:you(?:'re| are)|all is|things are) (?:doing )?(?:great|well|good|ok|okay|"
    r"fine)|you(?:'re| are) (?:the best|a star|a lifesaver)|(?:i'?d|i would) love it if|"
    r"(?:thanks|thank you)(?: so much)? for (?:your|the|all your|all the) help|"
    r"have a (?:nice|good|great|lovely) (?:day|one|evening|weekend)|"
    r"hello again(?:,? (?:my )?friend)?|dear (?:assistant|friend)|oh dear|"
    r"(?:take|takes) care|best wishes|(?:thanks|thank you) in advance|no (?:rush|hurry)|"
    r"much obliged|my fault|many thanks|thanks (?:heaps|a ton|a million|a lot)|"
    r"(?:silly|dumb|careless) of me|(?:cheers|much|lots of) love|"
    r"(?:it'?s been|what) a long (?:day|week)|what a (?:day|week|month|year)(?: it'?s been)?|"
    r"do me a (?:solid|favou?r)|(?:funny|long) story|sweet dreams|good night|"
    r"(?:happy|merry) (?:new year|holidays|christmas|xmas|easter|thanksgiving|weekend|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)|"
    r"long time no (?:see|talk|chat)|good to (?:see|hear from) you|how are you(?: doing)?|"
    r"(?:thanks|thank you)(?: again)? for (?:listening|chatting|understanding|your patience)|"
    r"(?:just )?between (?:us|you and me)|(?:to be|being) a pain|"
    r"(?:this|that) (?:isn'?t|is not) weird|(?:i )?feel bad|"
    r"(?:didn'?t|did not|don'?t|do not) keep|(?:such a )?(?:lovely|nice|beautiful) day(?: today)?|"
    r"(?:it|that) always helps|"
    r"the weather(?: here| today)? (?:is|has been|was) "
    r"(?:awful|terrible|lovely|nice|great|crazy|bad)|"
    r"(?:not|no) (?:a |much of a |too much of a )?(?:hassle|bother|problem))\b",
    re.IGNORECASE,
)
# Asides about the listener ("you've been so helpful", "love you lots", "thanks for your
# patience", "whenever you get a chance"): a stretch of the request between punctuation
# that speaks of "you" with no request verb and no verb of telling, knowing or showing.
# Requests name memory content in the first or third person ("I told you about X",
# "when Tim suggested X"), so such a stretch is talk about the exchange: its words never
# count as evidence that the request names something. Retrieval still reads them.
_SEGMENT = re.compile(r"[.!?;:,()]+|\s[-\u2013\u2014]+\s|\bbut\b", re.IGNORECASE)
_LISTENER = re.compile(r"(?<![-\w])(?:you|your|yours|yourself|u|ya)\b", re.IGNORECASE)
# An aside is short ("you're the best", "hope your week is going well"); a longer stretch
# that speaks of "you" usually carries the request too ("X shouldn't be in your memory").
ASIDE_WORDS = 6
_SEGMENT_KEEPS = re.compile(
    r"\b(?:"
    + "|".join(CUE_VERBS)
    + r"|roll|go back|keep|drop|wipe|scrap|ditch|toss|purge|take back|unlearn|pretend|act|"
    r"lose|clear|cancel|reset|get rid|told|tell|said|say|mention\w*|knew|know\w*|heard|"
    r"hear|learn\w*|found out|find out|talk\w*|discuss\w*|shar\w*|remember\w*|"
    r"recommend\w*|suggest\w*|show\w*|ask\w*|about|when|where|memor\w*|bring)\b",
    re.IGNORECASE,
)


# A letter written three or more times over ("hiii", "sooo"): the word is read with one.
_ELONGATED = re.compile(r"([a-z])\1{2,}", re.IGNORECASE)
# An exclamation ("hey stranger!", "hope the family's doing well!", "danke schön!") that
# holds no request verb and no verb of telling is a greeting or a remark on the moment:
# the request names its content where it asks for something, or where it says what was
# told. Split on the mark so a part knows whether an exclamation mark closed it. One that
# says what happened (a past tense: "Caroline's parade was amazing!", "I finished it!")
# or names someone (a capital on a word that is not filler) is telling the event.
_CLOSED = re.compile(r"(!+)")
_GREETED = re.compile(r"\b(?:happy|merry)\s+$", re.IGNORECASE)
_HAPPENED = re.compile(r"\b(?:was|were|went|had|got|made|came|took|saw|did|[a-z]{2,}ed)\b", re.I)
_CAPITAL = re.compile(r"\b[A-Z][\w'-]*")


def _tells(part: str) -> bool:
    """Whether an exclamation says what happened or names someone."""
    if _HAPPENED.search(part):
        return True
    return any(
        (w := m.group(0).lower().split("'")[0]) not in NO_CONTENT and w not in RETRIEVAL_STOPWORDS
        for m in _CAPITAL.finditer(part)
    )


def _exclamations_out(text: str) -> str:
    """``text`` without its short exclamations that ask and tell nothing."""
    parts = _CLOSED.split(text)
    kept: list[str] = []
    for n in range(0, len(parts), 2):
        part = parts[n]
        closed = n + 1 < len(parts)
        last = _SEGMENT.split(part)[-1]
        if (
            closed
            and not _SEGMENT_KEEPS.search(last)
            and len(last.split()) <= ASIDE_WORDS
            and not _tells(last)
        ):
            part = part[: len(part) - len(last)]
        kept.append(part)
    return " , ".join(kept)


def _without_asides(clause: str) -> str:
    """``clause`` with its courtesy formulas, its exclamations that ask and tell nothing
    and its asides about the listener taken out."""
    kept = [
        part
        for part in _SEGMENT.split(_exclamations_out(_COURTESY.sub(" , ", clause)))
        if not (
            _LISTENER.search(part)
            and not _SEGMENT_KEEPS.search(part)
            and len(part.split()) <= ASIDE_WORDS
        )
    ]
    return " , ".join(kept)


def _said_in_passing(word: str) -> bool:
    """Whether ``word`` names nothing (:data:`NO_CONTENT`), read with its drawn-out
    letters once ("hiii" as "hi")."""
    return word in NO_CONTENT or _ELONGATED.sub(r"\1", word) in NO_CONTENT


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
    knowledge: bool = False  # "when you didn't know yet that X": undo X's first mention

    @functools.cached_property
    def content(self) -> tuple[str, ...]:
        """Content words of the clause (stopwords and request vocabulary removed)."""
        return content_words(self.clause)

    @property
    def named(self) -> tuple[str, ...]:
        """Content words that are not filler: what must match for the request to act."""
        return tuple(t for t in self.content if t not in FILLER)

    @functools.cached_property
    def evidence(self) -> tuple[str, ...]:
        """The content words that count as evidence that the request names something:
        none of :data:`NO_CONTENT`, none from a courtesy formula or an aside about the
        listener. The confidence gates match these; retrieval reads :attr:`content`."""
        if not any(not _said_in_passing(t) for t in self.content):
            return ()
        return tuple(
            t for t in content_words(_without_asides(self.clause)) if not _said_in_passing(t)
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


def content_words(clause: str) -> tuple[str, ...]:
    """The clause's content tokens: stopwords and request vocabulary removed."""
    return tuple(t for t in q.tokens(q.content_query(clause)) if t not in q.REQUEST_WORDS)


def parse(text: str) -> ParsedRequest:
    """Read ``text`` once into a :class:`ParsedRequest`."""
    raw = text or ""
    normal, respelt = respell(raw)
    work = " ".join(normal.split())
    operators: list[Operator] = []
    excluded: list[str] = []

    low = work.lower()
    # Negation first: the ruled-out clause leaves the text every later rule reads.
    negated = "not " in low or "rather than" in low or "instead of" in low
    for pat in (_P_NOT_FIRST, _P_NOT_LAST, _P_RATHER) if negated else ():
        m = pat.search(work)
        if m:
            excluded.append(m.group("x").strip())
            rest = m.groupdict().get("rest") or ""
            work = (m.group("y") + " " + rest).strip()
            break

    knowledge = False
    # Each operator's pattern runs only when a word it needs is there (most requests
    # carry none, and the resolver reads every request).
    m = _P_KNOWLEDGE.search(work) if _KNOW_WORDS.search(work) else None
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

    if not knowledge:
        m = _P_ORDINAL.search(work) if _ORDINAL_WORDS.search(work) else None
        if m:
            operators.append(Operator("ordinal", _ORDINALS[m.group("ord").lower()], m.group(0)))
            work = _cut(work, m)
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

    # Intent: cue words of the request with the operator phrases taken out.
    intent: q.Intent = "undo" if knowledge else q.detect_intent(work)
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
