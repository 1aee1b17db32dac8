"""The benchmark's data model (streams, writes, rollback queries, probes) and its JSONL I/O."""

from chronobench.data.schema import (
    SCHEMA_VERSION,
    MemoryOp,
    Probe,
    RollbackQuery,
    Stream,
    Write,
)

__all__ = ["SCHEMA_VERSION", "MemoryOp", "Probe", "RollbackQuery", "Stream", "Write"]
