"""The grammar of a state of knowledge: "back to before you knew X", "when you still had
no idea X", "make it so you never heard X", "when X was news to you".

Such a request names the moment before something was first told, so it is read as an undo
of the first mention (:mod:`chronomem.parse` turns a match into that operator). The grammar is
a knower, a verb of coming to know, and a frame that puts the moment before it; pure text,
no store.
"""

from __future__ import annotations

import re

__all__ = ["KNOW_WORDS", "P_KNOWLEDGE"]

# A knowledge state names the moment before something was first told. As a grammar: a
# knower ("you", "I"), a verb of coming to know, and a frame that puts the moment before it:
# - "before / until you (had / 'd / ever / even) knew / heard / found out / got told X";
# - "when you (still) didn't know (yet) X", "when you had never heard of X", "when you
#   (still) had no idea / no clue X", "when you were (still) clueless about X";
# - a wish the knower never knew: "make it so / act like / as if you never heard X",
#   "pretend you never found out X";
# - the event as the subject: "when X was (still) news / new to you", "when X was
#   unknown to you", "back when X was a surprise to you".
_KNOWER = r"(?:you|i|u)"
_COME_TO_KNOW = (
    r"(?:knew anything|heard anything|know|knew|known|hear|heard|learn|learned|learnt|"
    r"find out|found out|(?:were|was|got|been|get) told)"
)
_ABOUT = r"(?:\s+(?:about|of|that))?"
_NOT_KNOW = (
    r"(?:didn'?t|did not|don'?t|do not|had not|hadn'?t|had never|'d never|never|have not|"
    r"haven'?t)"
)
_KNOWLEDGE_FRAMES = (
    # "before you (had / 'd) (ever) heard X"
    r"(?:before|until|till)\s+"
    + _KNOWER
    + r"(?:'d|\s+had|\s+have)?(?:\s+(?:ever|even))?\s+"
    + _COME_TO_KNOW
    + _ABOUT,
    # "when you (still) didn't know (yet) X", "when you'd never heard of X"
    r"(?:when|where|back when|the point when|the time when|back before)\s+"
    + _KNOWER
    + r"(?:'d)?\s+(?:still\s+)?"
    + _NOT_KNOW
    + r"\s+(?:yet\s+|even\s+|ever\s+)?(?:have\s+)?"
    + _COME_TO_KNOW
    + r"(?:\s+(?:yet|anything))?"
    + _ABOUT
    + r"(?:\s+yet)?",
    # "when you (still) had no idea / not a clue X"
    r"(?:when|where|back when|before)\s+" + _KNOWER + r"\s+(?:still\s+)?(?:had|have)\s+"
    r"(?:no|not\s+a)\s+(?:idea|clue)" + _ABOUT,
    # "back when you were still clueless about X"
    r"(?:when|where|back when)\s+" + _KNOWER + r"\s+(?:were|was)\s+(?:still\s+)?"
    r"(?:clueless|in the dark)" + _ABOUT,
    # "make it so / act like / pretend you never heard X"
    r"(?:(?:make|have)\s+it\s+(?:so|like)(?:\s+that)?|act\s+(?:like|as if)|as\s+if|as\s+though|"
    r"like|so\s+that|"
    r"pretend(?:\s+that)?)\s+"
    + _KNOWER
    + r"(?:'d|\s+had|\s+have)?\s+"
    + _NOT_KNOW
    + r"\s+(?:ever\s+|even\s+)?"
    + _COME_TO_KNOW
    + _ABOUT,
    # "when X was (still) news to you"
    r"(?:was|were|is|are)\s+(?:still\s+)?(?:(?:news|new|unknown)\s+to|a\s+surprise\s+to)\s+"
    + r"(?:you|me|u)"
    + r"(?:\s+yet)?",
)
P_KNOWLEDGE = re.compile(r"\b(?:" + "|".join(_KNOWLEDGE_FRAMES) + r")\b", re.IGNORECASE)

#: A cheap test for the words a knowledge state needs, before the full grammar runs.
KNOW_WORDS = re.compile(
    r"\b(?:knew|know|known|learn\w*|found out|find out|heard|hear|told|idea|clue|clueless|"
    r"in the dark|news|new|unknown|surprise)\b",
    re.I,
)
