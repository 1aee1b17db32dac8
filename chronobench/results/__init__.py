"""Run results on disk: the versioned schema (validated on read), the sample log and the
provenance a manifest records; shared by the runner, the scorer and the leaderboard."""

from chronobench.results.io import SampleLog
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
    "load_run",
    "parse_record",
]
