"""The one error type the builders raise on bad input."""

from __future__ import annotations


class DatasetError(ValueError):
    """A source file or user file is missing or malformed.

    The message names the file, the record and the field, and says how to fix it.
    """


def where(path: object, record: object | None = None, field: str | None = None) -> str:
    """Format a ``file[, record][, field]`` location prefix for error messages."""
    parts = [f"{path}"]
    if record is not None:
        parts.append(f"record {record}")
    if field is not None:
        parts.append(f"field {field!r}")
    return ": ".join(parts)
