"""Temporary PostgreSQL stores: a ChronoMem store in a schema of its own, dropped on close.

Kept apart from :mod:`chronomem.pg.locations` because it builds the store class,
which opens its backend through ``locations`` (one module both would be an import circle).
"""

from __future__ import annotations

import uuid
from typing import Any

from chronomem.pg.locations import with_schema
from chronomem.store import ChronoMem


def temporary_store(url: str, **options: Any) -> ChronoMem:
    """A new, empty ChronoMem store in a schema of its own on the server at ``url``,
    dropped when the store closes (benchmark stores, one per stream)."""
    mem = ChronoMem(with_schema(url, f"chronomem_tmp_{uuid.uuid4().hex[:12]}"), **options)
    mem.backend.ephemeral = True
    return mem
