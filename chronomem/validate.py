"""Argument checks shared by the public methods of :class:`ChronoMem`.

Each raises ``TypeError`` (wrong type) or ``ValueError`` (right type, bad value)
with a message naming the argument, so bad input never surfaces as an
``AttributeError`` or a ``sqlite3`` error from deep inside the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np


def text(value: Any, name: str, *, empty: bool = False) -> str:
    """A ``str`` (non-blank unless ``empty``)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__} {value!r:.60}")
    if not empty and not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r:.60}")
    if "\x00" in value and not empty:
        raise ValueError(f"{name} must not contain NUL characters")
    return value


NUL_REASON = "PostgreSQL text cannot hold it, so no backend stores it"


def no_nul(value: Any, name: str) -> Any:
    """A stored string must not contain NUL (``\\x00``); other values pass."""
    if isinstance(value, str) and "\x00" in value:
        raise ValueError(f"{name} must not contain NUL characters (\\x00): {NUL_REASON}")
    return value


def optional_text(value: Any, name: str) -> str | None:
    """None or a ``str``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string or None, got {type(value).__name__}")
    return value


def integer(value: Any, name: str, *, minimum: int | None = None) -> int:
    """An ``int`` (bools rejected; numpy integers accepted) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r:.60}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def choice(value: Any, name: str, options: tuple[str, ...], *, none_ok: bool = False) -> Any:
    """One of ``options`` (or None when ``none_ok``)."""
    if value is None and none_ok:
        return None
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {', '.join(options)}, got {value!r:.60}")
    return value


def item_ids(value: Any, name: str) -> list[str]:
    """An iterable of non-empty item-id strings; a bare string is an error (it would
    otherwise be read as one id per character)."""
    if isinstance(value, (str, bytes, Mapping)):
        raise TypeError(
            f"{name} must be a list of item ids, got a {type(value).__name__}; "
            f"wrap a single id in a list: [{value!r:.40}]"
        )
    if not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of item ids, got {type(value).__name__}")
    out = list(value)
    for i, item in enumerate(out):
        if not isinstance(item, str) or not item:
            raise TypeError(f"{name}[{i}] must be a non-empty string, got {item!r:.60}")
        no_nul(item, f"{name}[{i}]")
        id_size(item, f"{name}[{i}]")
    return out


STAGES = ("lexical", "dense", "hybrid")


def stage(value: Any, name: str) -> str:
    """A retrieval stage name ("lexical", "dense" or "hybrid")."""
    if value not in STAGES:
        raise ValueError(f"{name} must be one of {', '.join(STAGES)}, got {value!r}")
    return str(value)


# The longest app, user or item id, in UTF-8 bytes, on every backend: PostgreSQL keeps
# ids in btree indexes whose entries must fit a third of a page (2,704 bytes), and app
# and user share one entry (scopes' UNIQUE (app, user)); SQLite has no such limit, but
# one contract for both means a store moves between them unchanged.
MAX_ID_BYTES = 1024


def id_size(value: str, name: str) -> str:
    """An id of at most :data:`MAX_ID_BYTES` bytes in UTF-8 (checked before any SQL)."""
    if len(value) * 4 > MAX_ID_BYTES:  # only long ids pay for the encoding
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_ID_BYTES:
            raise ValueError(
                f"{name} is {size} bytes in UTF-8; app, user and item ids may be at most "
                f"{MAX_ID_BYTES} bytes on every backend: pass a shorter id (e.g. a hash of "
                "the long one, keeping the long text in an item's text or meta)"
            )
    return value


def scope_key(app: Any, user: Any) -> None:
    """``app`` and ``user`` are non-empty strings of at most :data:`MAX_ID_BYTES` bytes."""
    for key, value in (("app", app), ("user", user)):
        if not isinstance(value, str):
            raise TypeError(f"{key} must be a string, got {type(value).__name__}")
        if not value:
            raise ValueError(f"{key} must be a non-empty string, got {value!r}")
        no_nul(value, key)
        id_size(value, key)
