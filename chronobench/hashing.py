"""Canonical JSON and the sha256 helpers every content hash is built from.

Bottom layer: imports nothing from chronobench. Identifiers whose bytes are already
published keep their own encodings (run-folder keys, sample rows, prompt hashes, call
cache keys, user-query ids); they say so where they are computed.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

__all__ = [
    "canonical_json",
    "file_sha256",
    "pick",
    "sha256_bytes",
    "sha256_json",
    "sha256_text",
    "stable_hash",
]


def canonical_json(obj: Any) -> str:
    """One-line JSON with sorted keys, no spaces and unescaped unicode: equal values give
    equal bytes. Non-JSON values (paths, dates) are written as ``str``."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """Hex sha256 of ``text`` encoded as UTF-8."""
    return sha256_bytes(text.encode("utf-8"))


def sha256_json(obj: Any) -> str:
    """Hex sha256 of :func:`canonical_json` of ``obj``."""
    return sha256_text(canonical_json(obj))


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def stable_hash(*parts: object) -> int:
    """A process-independent 64-bit hash of ``parts`` (Python's ``hash`` is salted per
    process); the builders' and probe ranking's seeded choices depend on it."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big")


def pick(options: list[str] | tuple[str, ...], *key: object) -> str:
    """One of ``options``, chosen deterministically by :func:`stable_hash` of ``key``."""
    return options[stable_hash(*key) % len(options)]
