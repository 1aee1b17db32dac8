"""Run results on disk: the versioned schema (validated on read) and the atomic writers
shared by the runner, the scorer and the leaderboard."""

from chronobench.results.io import (
    SampleLog,
    atomic_write_json,
    atomic_write_text,
    dump_json,
    file_sha256,
)
from chronobench.results.records import (
    ProbeRecord,
    SampleRecord,
    SelectionRecord,
    TaskRecord,
    parse_record,
)
from chronobench.results.schema import (
    RESULTS_SCHEMA_VERSION,
    LoadedRun,
    Manifest,
    MetricsFile,
    load_run,
)

__all__ = [
    "RESULTS_SCHEMA_VERSION",
    "LoadedRun",
    "Manifest",
    "MetricsFile",
    "ProbeRecord",
    "SampleLog",
    "SampleRecord",
    "SelectionRecord",
    "TaskRecord",
    "atomic_write_json",
    "atomic_write_text",
    "dump_json",
    "file_sha256",
    "load_run",
    "parse_record",
]
