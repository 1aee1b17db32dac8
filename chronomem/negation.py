"""Negation and contrast in an undo request: which clause the writer means and which one
they rule out ("not the museum chat, the one about the park"). The request parser
(:mod:`chronomem.parse`) reads the meant clause as the request and keeps the ruled-out one
aside, so that retrieval can pass over what it names."""

from __future__ import annotations

import re

from chronomem.cues import CHAT_NOUN
from chronomem.nocontent import said_in_passing
from chronomem.query import content_words

# Negation and contrast: a ruled-out clause X and the clause meant Y. The shapes, as a
# grammar rather than word lists:
# - leading: "not X, Y", "not X but Y", "no, not X - Y", "I don't mean X, I mean Y", after
#   an optional shared head ("the Prius breaking down: not the old one, the new one", "the
#   internship thing, not the interview, the chat where ..."): the "not" opens a clause;
# - trailing: "Y, not X", "Y - and not X", "Y, though not X", "Y; I don't mean X" (a stop
#   before the "not"); without a stop, X must name an episode ("Y not the biking one"), so
#   a "not" inside content ("the chat where I said I'm not sure") stays content;
# - self-correction: "X? no, Y", "X... no wait, Y", "X - nope, Y", across a full stop
#   ("X. no, the one about Y", "X. sorry, the one where Y");
# - "Y rather than X", "Y instead of X";
# - an aside in brackets: "Y (not X)", "Y (but not X)", "Y (I don't mean X)"; a bracket
#   closes the ruled-out clause as a stop would, so X needs no episode noun.
# An adverb or infinitive after "not" ("not sure", "not to bother you") is no negation.
_NOT_OPEN = (
    r"(?:(?:no|nope|nah)\s*[,.!-]*\s+)?(?:(?:i\s+)?(?:do\s+not|don'?t|didn'?t)\s+mean\s+|not\s+)"
    r"(?!(?:sure|certain|really|quite|so|too|very|much|only|just|yet|even|exactly|to|that\s+"
    r"(?:sure|much|important))\b)"
)
_STOP = r"(?:[,;:.!?]|\s[-\u2013\u2014]+)"
_P_NOT_FIRST = re.compile(
    r"^(?P<head>(?:[^,;:.!?]*?[:;\u2013\u2014]\s*|[^,;:.!?]+,\s*)?)"
    + _NOT_OPEN
    + r"(?P<x>[^,;:.!?]+?)\s*(?:"
    + _STOP
    + r"|\s+but\s+)\s*"
    r"(?:(?:i\s+(?:mean|meant)|rather|instead|but)\s*,?\s+)?(?P<y>\S.*)$",
    re.IGNORECASE,
)
_P_NOT_LAST = re.compile(
    r"^(?P<y>.+?)\s*"
    + _STOP
    + r"\s*(?:(?:and|but|though|although)\s+)?"
    + _NOT_OPEN
    + r"(?P<x>[^,;:.!?]+?)\s*(?P<rest>(?:[,;:.!?]|[-\u2013\u2014]+\s).*)?$"
    r"|^(?P<y2>.+?)\s+(?:and\s+|but\s+)?not\s+(?P<x2>(?:the|that|my)\s+[^,;.]*?"
    r"\b" + CHAT_NOUN + r"s?\b[^,;.]*?)\s*[.!]?\s*$",
    re.IGNORECASE,
)
_P_NOT_BRACKET = re.compile(
    r"^(?P<y>.+?)\s*[(\[]\s*(?:(?:and|but)\s+)?" + _NOT_OPEN + r"(?P<x>[^)\]]+?)\s*[.!]?\s*[)\]]"
    r"(?P<rest>.*)$",
    re.IGNORECASE,
)
_P_CORRECTED = re.compile(
    r"^(?P<x>.*?\w.*?)\s*(?:\?+|\.\.\.|\u2026|,|(?P<stop>[.!])|\s[-\u2013\u2014]+)\s*"
    r"(?:(?:no|nope|nah)\b\s*(?:[,!.]+\s*|(?=(?:wait|sorry|actually|i\s+mean)\b))"
    r"|(?:wait|sorry)\s*[,!]+\s*(?=(?:no|i\s+mean)\b)"
    # "X. sorry, the one about Y", "X - actually, that chat where Y": a correction word
    # before a definite episode is the same taking back, without a "no".
    r"|(?:sorry|actually|wait|oops)\s*[,!]+\s*(?=(?:the|that)\s+" + CHAT_NOUN + r"s?\b))"
    r"(?:(?:no|wait|sorry|actually|i\s+mean|i\s+meant)\b\s*[,!.]*\s*)*(?P<y>\S.*)$",
    re.IGNORECASE,
)
_COMMENT_OPEN = re.compile(r"(?:a|an|any|in|at|on|for)\s", re.IGNORECASE)
_CORRECTION_REFERS = re.compile(
    r"(?:the|that|this|those|my|our|his|her|their|when|where)\b", re.IGNORECASE
)
# The clause meant refers back to the ruled-out one by a pro-form ("John's one for the
# veterans", "the brand new one", "the chat where he'd finally played it", "when she
# broke it again"): the ruled-out clause's topic words are the meant clause's too.
_P_PRO_FORM = re.compile(
    r"\b(?!(?:that|this|the|which|each|any|every|no|some)\s)[\w']+\s+ones?\b"
    r"|\bthe\s+ones?\b(?!\s+(?:where|when|about|in\s+which|with|from|on|at|that\s+was)\b)"
    r"|\b(?!(?:forget|undo|drop|erase|remove|delete|wipe|scrap|ditch|do|did|does)\s)"
    r"[a-z]+(?:ed|en)\s+(?:it|them)\b"
    # a clause whose object is "it" after a subject pronoun, past tense regular or not
    # ("when he hurt it again", "when she sold them"): the object is the ruled-out topic
    r"|\b(?:he|she|they|we|i|you)\s+(?:\w+\s+)?(?!(?:forget|undo|drop|erase|remove|delete|wipe|"
    r"scrap|ditch|do|did|does|mean|meant|said|say|love|loved|like|liked|hate|hated)\s)"
    r"[a-z]+\s+(?:it|them)\b",
    re.IGNORECASE,
)
# Where a noun phrase's head part ends: its modifiers ("for the shelter", "where ...")
# are what a contrast changes, the head ("5K") is what the pro-form stands for.
_P_MODIFIER = re.compile(
    r"\b(?:for|of|with|at|in|on|from|to|about|where|when|that|who|which|while)\b", re.I
)
_EPISODE_NOUNS = frozenset(
    "chat chats conversation conversations convo session sessions talk call one ones "
    "time times day days night evening morning discussion".split()
)
NEGATION_WORDS = re.compile(
    r"\b(?:not|mean|no|nope|nah|sorry|actually|wait|oops|rather\s+than|instead\s+of)\b",
    re.IGNORECASE,
)
_P_RATHER = re.compile(
    r"^(?P<y>.+?)\s*,?\s+(?:rather than|instead of)\s+(?P<x>[^,;.]+?)(?P<rest>[,;.].*)?$",
    re.IGNORECASE,
)


def names_negation(text: str) -> bool:
    """Whether ``text`` holds a negation or contrast of one of the shapes above."""
    return any(p.search(text) for p in (_P_NOT_FIRST, _P_NOT_BRACKET, _P_NOT_LAST, _P_RATHER))


def split_negation(text: str) -> tuple[str, str] | None:
    """(the clause meant, the clause ruled out) of a negation or contrast (the shapes above
    :data:`_P_NOT_FIRST`), or None. A ruled-out clause that names nothing on its own ("the
    old one") is read with the head it shares ("the Prius breaking down: not the old
    one"); a meant clause that refers back by a pro-form takes the ruled-out clause's
    topic words (not its owners: "not Maria's 5K, John's one")."""
    m = _P_NOT_FIRST.search(text)
    if m:
        head, x, y = m.group("head").strip(" ,;:-\u2013\u2014"), m.group("x"), m.group("y")
        own = _named(x)
        if head and _P_PRO_FORM.search(x):
            x = head + " " + x
        meant = (head + " " + y).strip()
        later = y
    else:
        m = _P_CORRECTED.search(text)
        # After a full stop the taking back must name what is meant as a noun phrase
        # or clause ("no, the one about Y", "no, when Y"): "No, really, no hurry" is a
        # courtesy, not a correction.
        if m and m.group("stop") and not _CORRECTION_REFERS.match(m.group("y")):
            m = None
        if m and _named(m.group("y")):
            x, meant = m.group("x"), m.group("y")
            later = meant
        else:
            m = _P_NOT_BRACKET.search(text) or _P_NOT_LAST.search(text) or _P_RATHER.search(text)
            if not m:
                return None
            g = m.groupdict()
            x = g.get("x") or g.get("x2") or ""
            meant = ((g.get("y") or g.get("y2") or "") + " " + (g.get("rest") or "")).strip()
            # Before a ruled-out noun phrase a pro-form stands for its head ("Bob's one
            # for the veterans, not Ann's swim"); before a ruled-out clause it does not: in
            # "the beach one -- not where they camped, where she painted", "the beach one"
            # is the shared head, and only a pro-form after the clause refers back.
            clausal = x.lower().split()[:1] in (["when"], ["where"], ["how"], ["while"])
            later = meant if not clausal else (g.get("rest") or "")
        own = _named(x)
    x = x.strip()
    # "I didn't mean it", "not that": a ruled-out part that names nothing is no contrast;
    # nor is one that opens with an indefinite or a preposition ("not a big deal if you
    # can't", "not in a hurry"): it comments on the asking, a ruled-out event is definite.
    if not meant or not _named(x) or _COMMENT_OPEN.match(x):
        return None
    if own and _P_PRO_FORM.search(later):
        meant = meant + " " + " ".join(_topic(x))
    return " ".join(meant.split()), x


def _topic(clause: str) -> list[str]:
    """What a pro-form in the meant clause stands for: of a noun phrase ("Maria's 5K for
    the shelter"), its head part without owners ("5K"); of a clause ("when James asked
    whether Cyberpunk was any good"), its named words without owners. A phrase headed by
    an episode noun ("the hoodie chat") stands for a chat, not a topic: nothing."""
    words = clause.split()
    clausal = bool(words) and words[0].lower() in ("when", "where", "how", "while")
    if not clausal:
        m = _P_MODIFIER.search(clause)
        head = clause[: m.start()] if m else clause
        last = head.split()[-1].lower() if head.split() else ""
        if last in _EPISODE_NOUNS:
            return []
        words = head.split()
    return _named(" ".join(w for w in words if not re.search(r"'s?$", w)))


def _named(clause: str) -> list[str]:
    """The clause's content words that name something (no filler, nothing said in
    passing)."""
    return [t for t in content_words(clause) if not said_in_passing(t)]
