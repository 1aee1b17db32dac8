"""Query handling: safe FTS5 expressions and rollback-intent detection.

No user text ever reaches ``MATCH`` verbatim: :func:`fts_expression` keeps only
word characters, quotes every token and ORs them, so FTS5 operators (``NEAR``,
``AND``, ``*``, ``^``, ``-``, parentheses, quotes) are inert.

Intent rule set (checked in this order, first hit wins; see :func:`detect_intent`):

1. ``restore_to`` cues: a move verb followed by "to <a state>" ("revert to the moment",
   "reset to when", "bring your memory back to just after"), "go back to when",
   "as of", "the state after", "right after", "just after", "at the point when",
   "up to", "by the time", "as it stood", "stop at", "drop the rest", and "everything
   after X" when X is not cancelled with it ("delete everything after the chat where X").
2. ``undo`` cues: "undo", "revert", "roll back the", "rollback the", "forget",
   "remove", "delete", "erase", "discard", "drop", "take back", "never happened",
   "since", "X and everything after", "from ... on", "before", other erasure verbs (scrap,
   wipe, strike, get rid of, throw away...), "never came up", and "X and (everything)
   that came after / followed".
3. Otherwise ``restore_to``.

Shift rule: an ``undo`` request names the commit to cancel, so its target is that
commit's parent; a ``restore_to`` request names the commit to return to.

Episode rule (:func:`refers_to_episode`): when a request names a whole episode ("the
conversation where ...") and commits carry an episode label (``session`` by default),
the matched commit stands for its whole episode: ``restore_to`` targets the episode's
last commit, ``undo`` the parent of its first. With one commit per episode this
changes nothing; with one commit per message it is what "after that conversation"
means.
"""

from __future__ import annotations

import re
from typing import Literal

from chronomem.words import RETRIEVAL_STOPWORDS

Intent = Literal["undo", "restore_to"]

_TOKEN = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TOKENS = 64  # bounds FTS work for pathological inputs (10 KB queries)

# "the state right before X" is where an undo of X lands, not a point to keep X at: a
# landing-point cue ("to the moment / point / time / state") never reads before "before".
_NOT_BEFORE = r"(?! (?:(?:right|just|immediately) )?before\b)"
_RESTORE_CUES = [
    # "<move> ... to <a state>": the request names where to land, not what to cancel.
    r"\b(?:revert|roll(?:ed)? ?back|go(?:ing)? back|get back|return|reset|rewind|restore|"
    r"bring|take)\w*\b(?: \w+){0,3} to (?:when|how|the (?:moment|point|time|state)\b"
    + _NOT_BEFORE
    + r"|(?:right|just) after)\b",
    r"\bgo(?:ing)? back to (?:when|the (?:moment|point|time)\b" + _NOT_BEFORE + ")",
    # "go back to the chat where X", "would you mind rewinding to our talk about X": the
    # move lands on an episode, which stays (to cancel one, "roll back the chat" has no "to").
    r"\b(?:roll(?:ed|ing)? ?back|go(?:ing)? back|get(?:ting)? back|return|rewind|restor|revert)\w*"
    r"(?: \w+){0,3}? to (?:the|that|our|this|my) (?:[\w'-]+ ){0,3}?"
    r"(?:chat|conversation|convo|talk|session|discussion|call)s?\b",
    r"\bback to (?:when|where)\b",
    # "restore to that", "go back to that one": the pronoun is the landing point.
    r"\b(?:restore|roll(?:ed)? ?back|go(?:ing)? back|return|rewind|revert)\w* to "
    r"(?:that|this|it|there)(?: one)?\s*(?:[.!?,;]|$)",
    r"\breturn to (?:when|the (?:moment|point|state)\b" + _NOT_BEFORE + ")",
    r"\brestore (?:\w+ ){0,3}to (?:when|the (?:moment|point|state)\b" + _NOT_BEFORE + ")",
    r"\brestore (?:the )?(?:memory|state|memories) to\b",
    r"\bas of\b",
    r"\bthe state (?:right |just )?after\b",
    r"\b(?:right|just|immediately) after\b",
    r"\bat the (?:point|moment|time) (?:when|where|after)\b",
    # "up until X" keeps X, as "up to X" does; not a phrasal verb's "up" before an
    # infinitive ("the gear he'd picked up to sharpen his game").
    r"(?<!\w)(?<!ed )(?<!got )(?<!set )(?<!put )(?<!came )(?<!gave )(?<!made )(?<!took )"
    r"(?<!woke )(?<!caught )(?<!brought )(?:only )?up (?:to|until|till|til)\b",
    r"\bby the time\b",
    r"\bas (?:it|things|they|you) (?:stood|were)\b",
    r"\bstop at\b",
    # "roll back to the end of the chat where X": the chat is kept, up to its end.
    r"\b(?:to|at|until|till) the (?:very )?end of\b",
    # "keep what you had once X, drop the rest": X is kept, what follows it goes.
    r"\b(?:drop|forget|discard|lose|bin|scrap|delete|erase|toss|ditch|dump|trash|chuck|wipe|"
    r"clear|remove|get rid of) the rest\b",
    # "delete everything after the chat where X", "anything after that can go": what comes
    # after X goes, X stays. Not "X and everything after (it)", which cancels X too, nor
    # "forget that chat, everything after it" (the pronoun is the cancelled X).
    r"(?<!\band )(?<!\bor )(?<!\bplus )(?<!\bnor )\b(?:everything|anything|whatever)\s+"
    r"(?:that\s+)?(?:came\s+|happened\s+|we\s+(?:talked|spoke)\s+about\s+)?after\s+"
    r"(?!(?:it|that|this|them)\s*(?:[.!?]|too\b|as\s+well\b|$))",
    r"\bkeep (?:only )?(?:what|everything|anything|the (?:memories|things))\b.{0,40}"
    r"\b(?:once|until|till|through|up to|as of|after)\b",
    # "pretend nothing after it was said": the referent itself stays.
    r"\b(?:nothing|none of (?:it|what)) (?:after|since|following) (?:it|that|this|then)\b",
]
_UNDO_CUES = [
    r"\bundo\b",
    r"\brevert\b",
    r"\broll(?:ing)? ?back (?:the|that|my|this)\b",
    # A courteous request puts its verb in the gerund ("would you mind removing the chat
    # where X", "I'd appreciate you forgetting ..."): the gerund of an erasure verb after a
    # verb of asking is that verb.
    r"\b(?:mind|appreciate|consider|try|about)\s+(?:you\s+)?(?:(?:just|maybe|kindly|quickly|simply)\s+)?"
    r"(?:undoing|removing|deleting|erasing|forgetting|dropping|discarding|wiping|scrapping|"
    r"ditching|purging|clearing|reverting|tossing|getting rid of|throwing (?:away|out)|"
    r"taking back)\b",
    r"\bforget\b",
    r"\bremove\b",
    r"\bdelete\b",
    r"\berase\b",
    r"\bdiscard\b",
    r"\bdrop\b",
    r"\btake back\b",
    r"\bnever happened\b",
    r"\bsince\b",
    r"\beverything after\b",
    r"\b(?:everything|anything) from\b",  # "roll back everything from when X": X goes too
    # "cancel everything starting from X": what starts at X goes, X with it.
    r"\bcancel\b",
    r"\b(?:everything|anything|all)\s+(?:starting|beginning)\s+(?:from|with|at)\b",
    r"\bfrom .{1,60} on(?:wards?)?\b",
    r"\bbefore\b",
    # More ways to say "cancel it": erasure verbs and "X and what came after". Not inside
    # a hyphenated name ("Counter-Strike", "clear-cut"): that is content, not a verb.
    r"(?<!-)\b(?:scrap|scrub|wipe|strike|purge|clear|throw away|throw out|get rid of|cut|toss|ditch)"
    r"\b(?!-)",
    r"\b(?:never|didn'?t|did not) (?:came up|come up|happen|happened|exist)\b",
    r"\b(?:and|plus|nor|with) (?:all |everything |anything |whatever |what )?(?:that )?"
    r"(?:came|comes|followed|follows|after|later|newer|since)\b",
    r"\b(?:and|nor|plus) (?:all|everything|anything|whatever|the rest)\b.{0,30}"
    r"\b(?:after|later|newer|since|followed)\b",
    # "act like that conversation never took place", "unlearn X", "X ... should go".
    r"\b(?:never|didn'?t|did not) (?:took|take|taken) place\b",
    r"\b(?:act|pretend|behave)\b.{0,20}\b(?:never|didn'?t|did not|wasn'?t|weren'?t)\b",
    r"\bunlearn\b",
    # "un-remember it", "unknow that": "un-" before a verb of knowing or perceiving asks
    # for the knowledge to go, as "unlearn" does.
    r"\bun-?(?:remember|know|see|hear)s?\b",  # not "unknown", "unseen"
    r"\b(?:should|must|can|has to|have to) (?:go|vanish|disappear|be gone)\b",
    r"\b(?:the ones|those|all the ones|anything|everything) (?:after|afterwards?|later)\b",
    r"\bafterwards?\b",
]
_RESTORE_RE = [re.compile(p, re.IGNORECASE) for p in _RESTORE_CUES]
_UNDO_RE = [re.compile(p, re.IGNORECASE) for p in _UNDO_CUES]

# Leading request phrasing carries intent but no content; strip it for retrieval.
_LEADING = re.compile(
    r"^\s*(?:please\s+|can you\s+|could you\s+|i want (?:you )?to\s+|let'?s\s+)*"
    r"(?:undo|revert|roll ?back|rollback|forget|remove|delete|erase|discard|drop|"
    r"go back to|go back|return to|restore(?: the)?(?: memory| state)?(?: to)?)\s*",
    re.IGNORECASE,
)


def opens_with_request(text: str) -> bool:
    """Whether ``text`` opens with a request verb ("undo ...", "please restore to ...")."""
    return _LEADING.match(text or "") is not None


def names_intent(query: str) -> bool:
    """Whether ``query`` holds a cue word of either intent (without one, the default
    ``restore_to`` of :func:`detect_intent` is a guess)."""
    text = query or ""
    return any(r.search(text) for r in (*_RESTORE_RE, *_UNDO_RE))


def detect_intent(query: str) -> Intent:
    """Classify a rollback request as ``"undo"`` or ``"restore_to"`` (rules above)."""
    text = query or ""
    if any(r.search(text) for r in _RESTORE_RE):
        return "restore_to"
    if any(r.search(text) for r in _UNDO_RE):
        return "undo"
    return "restore_to"


# Scope of the referent: a whole episode ("the conversation where ...") or one point in
# it ("the moment in our chat where ...", "the message where ..."). Point cues win.
_EPISODE_RE = re.compile(
    r"\b(?:conversations?|chats?|talks?|sessions?|meetings?|discussions?|calls?|episodes?)\b",
    re.IGNORECASE,
)
_POINT_RE = re.compile(
    r"\b(?:moment|message|point in|the part of|the line|the turn|the bit)\b", re.IGNORECASE
)


def refers_to_episode(query: str) -> bool:
    """True when the request names a whole episode (a conversation, session, meeting)
    rather than one message or moment inside it."""
    text = query or ""
    return bool(_EPISODE_RE.search(text)) and not _POINT_RE.search(text)


# Words that describe the rollback request itself (the operation, the time relation, the
# kind of episode) rather than what was remembered. They match every commit equally badly,
# so they are dropped from the text used to find the described commit.
REQUEST_WORDS = frozenset(
    """undo undoing revert reverting roll rolled rolling rollback back reset restore restoring
    return returning go going take yourself forget forgetting erase erasing discard discarding
    drop dropping remove removing delete deleting wipe cancel memory memories remember
    everything anything things stood newer later earlier after before since onwards onward
    starting end point moment state knew know known learned learnt conversation conversations
    chat chats talk session sessions discussion message messages came happened please just
    right exactly all our we us you your my me i it that this where which in what how when
    the a an and to of from with as at on up
    scrap toss ditch purge unlearn pretend never ever stuff whatever afterwards afterward
    rest ones once only should must nothing none was were be been is are had has have
    would could can do did does will about i'd i'm i've you've you'd let's""".split()
)
_WORD_SPAN = re.compile(r"[\w'-]+", re.UNICODE)


# Request phrasing made of words that are content elsewhere ("took" a trip, "keep" fit):
# removed only as whole phrases.
_REQUEST_PHRASES = re.compile(
    r"\b(?:(?:you|i|we) (?:were |have |had )?(?:told|said|mentioned|heard|picked up|learned|"
    r"learnt|found out)(?: (?:about|of))?|(?:told|tell) (?:you|me)(?: (?:about|of))?|"
    r"took place|take place|keep what you (?:had|knew)|"
    r"bring (?:your memory|things|yourself|it) back|act (?:like|as if|as though)|"
    r"throw away|get rid of|the ones after|what followed|(?:i'?d|i would) like|i want)\b",
    re.IGNORECASE,
)


def content_query(query: str) -> str:
    """The words of a request that describe memory content: the request phrasing
    (undo, roll back, everything after, the conversation where...) removed. Falls back to
    the request itself when nothing else is left."""
    stripped = _LEADING.sub("", query or "", count=1)
    stripped = _REQUEST_PHRASES.sub(" ", stripped)
    kept = [
        w
        for w in _WORD_SPAN.findall(stripped)
        if w.lower() not in REQUEST_WORDS and any(ch.isalnum() for ch in w)
    ]
    return " ".join(kept) if kept else (query or "")


def tokens(text: str, *, drop_stopwords: bool = True) -> list[str]:
    """Lower-cased word tokens, deduplicated in order, at most ``MAX_QUERY_TOKENS``."""
    seen: dict[str, None] = {}
    for tok in _TOKEN.findall((text or "").lower()):
        if tok.strip("_") == "" or (drop_stopwords and tok in RETRIEVAL_STOPWORDS):
            continue
        seen.setdefault(tok, None)
        if len(seen) >= MAX_QUERY_TOKENS:
            break
    return list(seen)


def fts_terms(text: str) -> list[str]:
    """The terms a lexical search for ``text`` ORs: its tokens, stopwords dropped unless
    nothing else is left (a storage backend turns them into its own query syntax)."""
    return tokens(text) or tokens(text, drop_stopwords=False)


def fts_expression(text: str) -> str | None:
    """A safe FTS5 MATCH expression ORing the quoted :func:`fts_terms` of ``text``; None
    if there are none."""
    return or_expression(fts_terms(text))


def or_expression(terms: list[str]) -> str | None:
    """FTS5 expression ORing ``terms`` as quoted phrases; None for no terms."""
    if not terms:
        return None
    # \w+ tokens contain no double quotes, so quoting makes each a plain phrase.
    return " OR ".join(f'"{t}"' for t in terms)


def content_words(clause: str) -> tuple[str, ...]:
    """The clause's content tokens: stopwords and request vocabulary removed."""
    return tuple(t for t in tokens(content_query(clause)) if t not in REQUEST_WORDS)
