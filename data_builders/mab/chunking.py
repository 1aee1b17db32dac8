"""Split a long context into writes on paragraph and sentence boundaries."""

from __future__ import annotations

import re

_SENT = re.compile(r"(?<=[.!?])\s+")
_STATEMENT = re.compile(r"^\s*(\d+)\.\s+(.+?)\s*$")


def size_of(text: str, unit: str) -> int:
    """Length in characters, or in whitespace tokens (an approximation of model tokens)."""
    return len(text) if unit == "chars" else len(text.split())


def _hard_split(text: str, size: int, unit: str) -> list[str]:
    if unit == "chars":
        return [text[i : i + size] for i in range(0, len(text), size)]
    words = text.split()
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]


def chunk_context(context: str, size: int, unit: str = "tokens") -> list[str]:
    """Greedy packing of paragraphs (then sentences, then words) into chunks <= ``size``."""
    if size <= 0:
        raise ValueError("chunk size must be positive")
    if unit not in ("chars", "tokens"):
        raise ValueError(f"chunk unit must be 'chars' or 'tokens', got {unit!r}")
    pieces: list[tuple[str, str]] = []  # (text, joiner used before it)
    for para in re.split(r"\n\s*\n", context):
        para = para.strip()
        if not para:
            continue
        if size_of(para, unit) <= size:
            pieces.append((para, "\n\n"))
            continue
        for k, sent in enumerate(s for s in _SENT.split(para) if s.strip()):
            parts = [sent] if size_of(sent, unit) <= size else _hard_split(sent, size, unit)
            for j, part in enumerate(parts):
                pieces.append((part, "\n\n" if k == 0 and j == 0 else " "))
    chunks: list[str] = []
    cur = ""
    for text, joiner in pieces:
        cand = f"{cur}{joiner}{text}" if cur else text
        if cur and size_of(cand, unit) > size:
            chunks.append(cur)
            cur = text
        else:
            cur = cand
    if cur:
        chunks.append(cur)
    return chunks


def numbered_statements(context: str) -> list[tuple[int, str]]:
    """``(number, statement)`` for each ``N. text`` line of a Conflict_Resolution context."""
    out = []
    for line in context.splitlines():
        m = _STATEMENT.match(line)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return out
