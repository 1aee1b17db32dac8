"""Requests that point at a write by its place in the conversation: "undo the second one".

The store resolves a request by what it says (its content words); "the second one" says
nothing about content, so the store refuses it. An MCP session knows what it wrote, in
order, and this module reads such a request as an index into that list. A request is
read this way only when every word in it is an ordinal or a filler ("undo", "the",
"fact", "you saved", ...): "undo the second move to Bergen" names content and goes to the
store. Standard library only.
"""

from __future__ import annotations

import re

__all__ = ["ordinal_index"]

_WORDS = {
    "first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4,
    "sixth": 5, "seventh": 6, "eighth": 7, "ninth": 8, "tenth": 9,
    "last": -1, "latest": -1, "previous": -1, "newest": -1, "recent": -1,
}  # fmt: skip
_NUMBERED = re.compile(r"^(\d{1,3})(?:st|nd|rd|th)$")
_FILLER = frozenset(
    """undo forget remove delete revert drop take back please can could you would the that
    this one ones fact facts memory memories thing things write writes change changes entry
    item note i me my we us just told said saved stored wrote remembered added gave of
    from in about it those these again now out most""".split()
)


def ordinal_index(request: str) -> int | None:
    """The list index ``request`` names (0 for "the first one", -1 for "the last one"),
    or None when the request is not purely such a reference."""
    words = re.findall(r"[a-z0-9]+", request.lower())
    if not words:
        return None
    picked: list[int] = []
    for word in words:
        m = _NUMBERED.match(word)
        if m and int(m.group(1)) >= 1:
            picked.append(int(m.group(1)) - 1)
        elif word in _WORDS:
            picked.append(_WORDS[word])
        elif word not in _FILLER:
            return None
    return picked[0] if len(picked) == 1 else None
