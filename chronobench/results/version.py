"""The results schema version every run file carries, and the versions this code reads."""

from __future__ import annotations

from typing import Literal

RESULTS_SCHEMA_VERSION = "2.1"
READABLE_VERSIONS = ("1.0", "2.0", "2.1")
#: The version a model writes; older files are read into this shape (``load_run``).
SchemaVersion = Literal["2.1"]
