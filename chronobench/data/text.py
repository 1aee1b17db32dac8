"""Text helpers the data model needs at run time (probe attachment): normalisation and
process-independent hashing. ``data_builders.textutil`` re-exports them."""

from __future__ import annotations

import hashlib
import string

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)


def stable_hash(*parts: object) -> int:
    """A process-independent 64-bit hash (Python's ``hash`` is salted per process)."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big")


def normalize(text: str) -> str:
    """LoCoMo-style normalisation: lowercase, no commas/punctuation/articles, single spaces."""
    text = text.replace(",", "").lower().translate(_PUNCT_TABLE)
    words = [w for w in text.split() if w not in ("a", "an", "the", "and")]
    return " ".join(words)


def contains_phrase(haystack_norm: str, needle_norm: str) -> bool:
    """Whole-word containment of one normalised string in another."""
    if not needle_norm:
        return False
    return f" {needle_norm} " in f" {haystack_norm} "
