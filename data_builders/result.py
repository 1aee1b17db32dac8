"""What a dataset builder returns before it is written to disk."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from chronobench.data.schema import RollbackQuery, Stream
from data_builders.probes import ProbePool


@dataclass
class BuildResult:
    """Streams, queries and probe pools of one dataset and granularity, plus counts."""

    streams: list[Stream]
    queries: list[RollbackQuery]
    pools: list[ProbePool]
    dropped_anchors: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    caveats: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
