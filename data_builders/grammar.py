"""Turn dataset questions into descriptive phrases for rollback queries.

Only a few question shapes are rephrased (the rest return ``None`` and are counted as
dropped), because a wrong descriptor is worse than a missing one.
"""

from __future__ import annotations

import re

from chronobench.text import words

_IRREGULAR_PAST = {
    "be": "was", "become": "became", "begin": "began", "bring": "brought", "build": "built",
    "buy": "bought", "catch": "caught", "choose": "chose", "come": "came", "cut": "cut",
    "dig": "dug", "do": "did", "draw": "drew", "drink": "drank", "drive": "drove",
    "eat": "ate", "fall": "fell", "feel": "felt", "fight": "fought", "find": "found",
    "fly": "flew", "forget": "forgot", "get": "got", "give": "gave", "go": "went",
    "grow": "grew", "hang": "hung", "hide": "hid", "have": "had", "hear": "heard", "hit": "hit",
    "hold": "held", "hurt": "hurt", "keep": "kept", "know": "knew", "lead": "led",
    "learn": "learned", "leave": "left", "lend": "lent", "let": "let", "lose": "lost",
    "make": "made", "mean": "meant", "meet": "met", "pay": "paid", "put": "put",
    "quit": "quit", "read": "read", "ride": "rode", "ring": "rang", "rise": "rose",
    "run": "ran", "say": "said", "see": "saw", "seek": "sought", "sell": "sold",
    "send": "sent", "set": "set", "shoot": "shot", "shut": "shut", "sing": "sang",
    "sit": "sat", "sleep": "slept", "speak": "spoke", "spend": "spent", "stand": "stood",
    "steal": "stole", "stick": "stuck", "swim": "swam", "take": "took", "teach": "taught",
    "tell": "told", "think": "thought", "throw": "threw", "understand": "understood",
    "wake": "woke", "wear": "wore", "win": "won", "write": "wrote",
}  # fmt: skip
_PAST_FORMS = frozenset(_IRREGULAR_PAST.values()) - {"read", "hit", "cut", "let", "put"}
_VOWELS = set("aeiou")

# Subject: a name, optionally possessive with one noun ("Melanie's kids"), or two names.
_NAME = r"[A-Z][a-zA-Z\-]+"
_SUBJ = rf"(?P<subj>{_NAME}(?: and (?:{_NAME}|(?:her|his|their) [a-z]+))?(?:'s? [a-z]+)?)"
_WH_DID = re.compile(
    rf"^(?P<wh>When|What|Where|Why|How|Who) did {_SUBJ} (?P<verb>[a-z]+)(?P<rest>.*)\?$"
)
_DID = re.compile(rf"^Did {_SUBJ} (?P<verb>[a-z]+)(?P<rest>.*)\?$")
_WHAT_IS = re.compile(r"^What (?:is|are|was|were) (?P<np>.+)\?$")
_NP_WITH_NAME = re.compile(rf"\b{_NAME}'s? [a-z]")
_FUNCTION_WORDS = frozenset(words("and or not to of for in on at with about by from"))


def past_tense(verb: str) -> str:
    """Simple-past form of a base-form English verb (irregular table, then spelling rules)."""
    if verb in _IRREGULAR_PAST:
        return _IRREGULAR_PAST[verb]
    if verb in _PAST_FORMS or (
        verb.endswith("ed") and not verb.endswith("eed")
    ):  # questions sometimes already use the past
        return verb
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in _VOWELS:
        return verb[:-1] + "ied"
    # Double the final consonant of short consonant-vowel-consonant verbs (stop -> stopped).
    if (
        len(verb) <= 4
        and len(verb) >= 3
        and verb[-1] not in _VOWELS | {"w", "x", "y"}
        and verb[-2] in _VOWELS
        and verb[-3] not in _VOWELS
    ):
        return verb + verb[-1] + "ed"
    return verb + "ed"


def question_descriptor(question: str) -> tuple[str, str] | None:
    """Rephrase a question as ``(kind, phrase)`` or return None when it has no safe shape.

    ``kind`` is ``"clause"`` ("Caroline went to the support group") or ``"topic"``
    ("what Melanie painted recently", "Caroline's identity").
    """
    q = " ".join(question.strip().split())
    m = _WH_DID.match(q) or _DID.match(q)
    if m and m["verb"] in _FUNCTION_WORDS:
        return None
    m = _WH_DID.match(q)
    if m:
        clause = f"{m['subj']} {past_tense(m['verb'])}{m['rest']}".strip()
        if m["wh"] == "When":
            return "clause", clause
        return "topic", f"{m['wh'].lower()} {clause}"
    m = _DID.match(q)
    if m:
        return "topic", f"whether {m['subj']} {past_tense(m['verb'])}{m['rest']}".strip()
    m = _WHAT_IS.match(q)
    if (
        m
        and _NP_WITH_NAME.search(m["np"])
        and " or " not in m["np"]
        and re.match(rf"(?:the |a |an |{_NAME})", m["np"])
        and m["np"].split()[-1] not in _FUNCTION_WORDS
    ):
        return "topic", m["np"]
    return None
