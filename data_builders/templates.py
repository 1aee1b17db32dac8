"""Query templates: several phrasings per intent and per anchor scope.

``{ref}`` is a noun ("the conversation") followed by a descriptor ("where Caroline went
to the support group"). No template contains a digit, a date or an id.
"""

from __future__ import annotations

RESTORE_TO: tuple[str, ...] = (
    "Roll your memory back to right after {ref}.",
    "Go back to how things stood just after {ref}, and forget anything newer.",
    "Restore what you knew as of the end of {ref}.",
    "Please reset your memory to the point just after {ref}; drop everything later.",
    "Take yourself back to right after {ref}.",
)
UNDO: tuple[str, ...] = (
    "Undo {ref} and everything that came after it.",
    "Forget everything from {ref} onwards.",
    "Roll back to just before {ref}.",
    "Discard what you learned starting with {ref}.",
    "Please erase {ref} and all later memories.",
)
TEMPLATES: dict[str, tuple[str, ...]] = {"restore_to": RESTORE_TO, "undo": UNDO}

# Nouns by anchor scope: a whole session, a single write, or a passage of a document.
NOUNS: dict[str, tuple[str, ...]] = {
    "session": ("the conversation", "our chat", "the talk"),
    "write": ("the message", "the moment in our chat", "the point in our conversation"),
    "passage": ("the passage", "the part of the text", "the section"),
    "statement": ("the statement", "the fact you were told", "the note"),
}

# Descriptor shapes by anchor form: a full clause, or a topic to be talked about.
CLAUSE_FORMS: tuple[str, ...] = ("where {x}", "in which {x}")
TOPIC_FORMS: tuple[str, ...] = ("where we talked about {x}", "about {x}", "where {x} came up")
