"""Whether a request names any content: the words and phrases that name nothing.

A request that names nothing ("hi, undo what I said before", "plz fogret wat i sed b4
thx", "gracias amigo, please undo that") is refused, never matched on its filler words.
The parser (:mod:`chronomem.parse`) reads the request; this module decides which of its
content words count as *evidence* that it names something
(:attr:`chronomem.parse.ParsedRequest.evidence`):

- :data:`FILLER`: words that name no content wherever they stand (greetings,
  politeness, "mind", times said in passing);
- :data:`NO_CONTENT`: with :data:`FILLER`, the words that leave a request naming nothing
  when no other word is left (one class a line);
- courtesy formulas, exclamations that ask and tell nothing, and asides about the
  listener, set aside as whole phrases (:func:`without_asides`); drawn-out letters are
  read once (:func:`said_in_passing`).

A message that asks for no change of memory at all ("Cheers for all your help today, talk
soon!", "Long day at work. Anyway, thanks for being here.") is refused too, whatever it names
(:func:`asks_for_change`): it holds no request verb, no cue of either intent and no word a
request for a change uses (what to keep, where memory ends, what it should not know).

Only which words count as evidence is decided here: retrieval reads the request as
before. The classes were written on the development probes
(``data_builders/user_queries/locomo_nl_dev_refusals*.jsonl``, docs/nl_parse.md).
"""

from __future__ import annotations

import re

from chronomem.cues import ASKS, CUE_VERBS, respell
from chronomem.query import names_intent
from chronomem.words import RETRIEVAL_STOPWORDS

__all__ = [
    "ASIDE_WORDS",
    "FILLER",
    "NO_CONTENT",
    "asks_for_change",
    "said_in_passing",
    "without_asides",
]

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
    # degree and stance adverbs: they say how much or how sincerely, never what
    # ("appreciate you, truly", "totally my bad", "seriously, undo it")
    """ truly seriously totally genuinely sincerely literally absolutely definitely
    certainly frankly basically simply quite completely entirely incredibly extremely"""
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


def without_asides(clause: str) -> str:
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


def said_in_passing(word: str) -> bool:
    """Whether ``word`` names nothing (:data:`NO_CONTENT`), read with its drawn-out
    letters once ("hiii" as "hi")."""
    return word in NO_CONTENT or _ELONGATED.sub(r"\1", word) in NO_CONTENT


# Words a request for a change of memory uses besides its verbs ("keep only January",
# "your memory should end there", "make it so you never heard that", "back to the chat
# where X"): a message holding none of them (nor a verb of :data:`ASKS`, nor an intent cue)
# asks for nothing. Each is held to the sense a request gives it: "keep" before a gerund
# goes on doing ("I keep meaning to"), "last" names a thing or a chat ("last week" does
# not), "never" is about hearing or happening, "back to" is not "back to you" or "to work".
_WANTS = re.compile(
    r"\b(?:keep(?:s|ing)?\b(?! \w+ing\b)|kept|hold(?:ing)? on|hang(?:ing)? on|retain|"
    r"memor(?:y|ies)|remember(?:s|ed|ing)?|know(?:s|n|ing)?|knew|heard|learn(?:ed|t)?|"
    r"newest|latest|last (?:thing|one|conversation|chat|talk|bit)s?|only|"
    r"end(?:s|ed)?|finish(?:es|ed)?|stop(?:s|ped)?|"
    r"never (?:heard|happened|said|told|came|knew|existed|was|were|took)|pretend|act (?:as|like)|"
    r"set|put|bring|back (?:to|till|until)\b(?! (?:you|u|ya|work|normal)\b)|gone|go|goes|"
    r"should(?:n'?t)?|needs? to|want|wish|rather|cancel|revers(?:e|ing)|"
    r"version|state|point|before|after|since|until|till|through|thru|upto)\b",
    re.IGNORECASE,
)


def asks_for_change(text: str) -> bool:
    """Whether ``text`` (respelt: "plz fogret" reads as "please forget") asks for any change
    of memory: a request verb, a cue of either intent, or a word of :data:`_WANTS`."""
    read = respell(text or "")[0]
    return bool(ASKS.search(read) or names_intent(read) or _WANTS.search(read))
