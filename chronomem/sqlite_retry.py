"""One retry rule for the SQLite files several processes share (call and vector caches)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def retry_busy(fn: Callable[[], T], attempts: int = 20) -> T:
    """Run ``fn``, retrying while another process holds a lock the busy timeout did not
    cover (SQLite answers SQLITE_BUSY at once in a few cases, e.g. while switching to WAL)."""
    delay = 0.01
    for i in range(attempts):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            msg = str(exc).lower()
            if ("locked" not in msg and "busy" not in msg) or i == attempts - 1:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
    raise AssertionError("unreachable")
