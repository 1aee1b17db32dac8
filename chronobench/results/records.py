"""Typed per-sample records: one line of ``samples.jsonl`` each.

The runner writes :class:`SelectionRecord` (a selector's ranking of one rollback query)
and :class:`ProbeRecord` (one probe answered after one rollback); the scorer and
``metrics.json`` read them back through :func:`parse_record`. Rows of other task kinds
(the repair track's) are :class:`TaskRecord`, which keeps their fields as written.

Every record has a ``status`` (``ok``, or ``error`` with the reason in ``error``): a
runner that catches a per-sample failure records it instead of losing the run, and the
scorer leaves such records out of every mean (``metrics.json`` then counts them under
``errors``). A record serialises exactly as the runner's rows always have (sorted keys;
``status`` and ``error`` only when not ``ok``), so sample hashes do not move.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
)

__all__ = [
    "ProbeRecord",
    "SampleRecord",
    "SelectionRecord",
    "TaskRecord",
    "dump_record",
    "dump_row",
    "explain",
    "parse_record",
]

# Numbers keep their JSON type (an int stays an int, a float a float): rows re-serialise
# byte for byte.
Number = StrictBool | StrictInt | StrictFloat
Ranked = list[tuple[StrictInt, Number]]


class SampleRecord(BaseModel):
    """What every sample line has."""

    model_config = ConfigDict(extra="forbid")

    sample_id: str
    kind: str
    status: Literal["ok", "error"] = "ok"
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the sample was produced and scored."""
        return self.status == "ok"

    #: The record's fields are all plain values (no nested models, no extras), so its
    #: row is its field dict as is: what ``model_dump`` gives, without copying every
    #: list (the runner writes ~200k rows per main job).
    _plain_fields: ClassVar[bool] = False

    def to_row(self) -> dict[str, Any]:
        """The JSON object of its line (``status``/``error`` only when not ok)."""
        row = dict(self.__dict__) if self._plain_fields else self.model_dump()
        if row.get("status") == "ok" and row.get("error") is None:
            row.pop("status", None)
            row.pop("error", None)
        return row


class _QueryFields(SampleRecord):
    """The rollback query a sample is about (repeated on every line)."""

    query_id: str
    stream_id: str
    intent: str | None
    source: str | None
    request: str
    gold_version: StrictInt


class SelectionRecord(_QueryFields):
    """RQ1: one selector's ranking of the versions for one rollback query."""

    _plain_fields: ClassVar[bool] = True

    kind: Literal["selection"] = "selection"
    selector: str
    n_versions: StrictInt
    ranked: Ranked
    scores: dict[str, Number]
    # Why a gated selector refused the request (it ranked nothing); absent from the line
    # when None, so the rows of selectors that rank keep their bytes.
    refused: str | None = None

    def to_row(self) -> dict[str, Any]:
        """The JSON object of its line (``refused`` only when the selector refused)."""
        row = super().to_row()
        if row.get("refused") is None:
            row.pop("refused", None)
        return row


class ProbeRecord(_QueryFields):
    """RQ2/RQ3: one probe answered by the system after one rollback."""

    _plain_fields: ClassVar[bool] = True

    kind: Literal["probe"] = "probe"
    probe_kind: str
    category: StrictInt | None
    selected_version: StrictInt | None
    candidates: Ranked
    context: list[str]
    context_n: StrictInt
    prompt_sha256: str | None
    prediction: str
    probe: dict[str, Any]
    scores: dict[str, Number]
    # A language model's reply as it came (``prediction`` is what was read from it,
    # chronobench.metrics.replies) and the request resolver's note of the query; both
    # absent from the line when None, so the extractive reader's rows are as they were.
    reply: str | None = None
    resolver: dict[str, Any] | None = None

    def to_row(self) -> dict[str, Any]:
        row = super().to_row()
        for key in ("reply", "resolver"):
            if row.get(key) is None:
                row.pop(key, None)
        return row


class TaskRecord(SampleRecord):
    """A row of another task kind (its own fields, kept as written)."""

    model_config = ConfigDict(extra="allow")


_KINDS: dict[str, type[SampleRecord]] = {"selection": SelectionRecord, "probe": ProbeRecord}


def parse_record(row: Mapping[str, Any] | SampleRecord) -> SampleRecord:
    """The typed record of one row (``kind`` picks the class). Raises
    :class:`pydantic.ValidationError` on a row that does not fit."""
    if isinstance(row, SampleRecord):
        return row
    cls = _KINDS.get(str(row.get("kind")), TaskRecord)
    return cls.model_validate(dict(row))


def dump_record(record: SampleRecord | Mapping[str, Any]) -> str:
    """One ``samples.jsonl`` line (sorted keys, newline-terminated)."""
    return dump_row(record.to_row() if isinstance(record, SampleRecord) else dict(record))


def dump_row(row: Mapping[str, Any]) -> str:
    """The ``samples.jsonl`` line of a plain row (what :func:`dump_record` writes)."""
    return json.dumps(row, sort_keys=True, default=str) + "\n"


def explain(exc: ValidationError) -> str:
    """The first problem of a record that does not validate, as ``field: message``."""
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"]) or "(row)"
    return f"field {key!r}: {err['msg']} ({len(exc.errors())} problem(s))"
