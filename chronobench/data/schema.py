"""The one data model of the benchmark.

A *stream* is the ordered list of memory writes of one conversation or context.
Version ``v_j`` is the memory state after write ``j`` (``v_0`` is the empty store),
so versions are integers on the stream's timeline and write ``j`` commits ``v_j``.

A *rollback query* is a natural-language request whose gold target is one version
``v*`` of one stream; it carries the *probes* (questions or a summary request) that
test behaviour at ``v*`` after the rollback.

Field provenance matters for leakage (see data_builders/README.md): a write's
``ops`` and ``summary`` are what a memory system may index; a query's ``anchor``
is hidden from systems and is only kept for auditing.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCHEMA_VERSION = "1.0"

OpName = Literal["add", "update", "delete", "consolidate", "revert", "redact"]
Intent = Literal["restore_to", "undo"]
QuerySource = Literal["template", "paraphrase", "user"]
ProbeKind = Literal["qa", "future_qa", "final_qa", "summary"]
Scoring = Literal["locomo", "mab"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class MemoryOp(_Model):
    """One change to one memory item inside a write."""

    op: OpName
    item_id: str
    text: str | None = Field(None, description="new content; None for delete")
    meta: dict[str, Any] = Field(default_factory=dict)


class Write(_Model):
    """One memory write; committing it produces version ``version``."""

    version: int = Field(ge=1, description="j: the version this write commits (1-based)")
    ops: list[MemoryOp]
    summary: str | None = Field(None, description="optional commit summary a system may index")
    labels: dict[str, Any] = Field(
        default_factory=dict,
        description="timeline position: session index, date, dialog ids, chunk index...",
    )
    source: str = "dataset"
    reason: str = "ingest"
    valid_time: str | None = None


class Stream(_Model):
    """The ordered writes of one conversation/context."""

    schema_version: str = SCHEMA_VERSION
    stream_id: str
    dataset: str
    granularity: str
    sample_id: str
    writes: list[Write]
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _versions_are_consecutive(self) -> Stream:
        for i, w in enumerate(self.writes, start=1):
            if w.version != i:
                raise ValueError(
                    f"stream {self.stream_id}: write #{i} has version {w.version}; "
                    "versions must be 1..n in order"
                )
        return self

    @property
    def n_versions(self) -> int:
        """Number of versions after v_0 (= number of writes)."""
        return len(self.writes)


class Probe(_Model):
    """A task asked after the rollback, scored against the state at ``v*``."""

    probe_id: str
    kind: ProbeKind
    question: str
    answers: list[str] = Field(
        default_factory=list, description="acceptable gold answers; empty means: abstain"
    )
    category: int | None = Field(None, description="LoCoMo QA category (1-5) when known")
    evidence_versions: list[int] = Field(default_factory=list)
    future_answers: list[str] = Field(
        default_factory=list, description="the post-v* answer, used to score leakage"
    )
    reference: str | None = Field(None, description="reference summary of the target scope")
    future_references: list[str] = Field(
        default_factory=list, description="post-v* events, used to score summary leakage"
    )
    scoring: Scoring = "locomo"
    meta: dict[str, Any] = Field(default_factory=dict)


class RollbackQuery(_Model):
    """A natural-language rollback request with its gold target and probes."""

    schema_version: str = SCHEMA_VERSION
    query_id: str
    stream_id: str
    text: str
    intent: Intent
    source: QuerySource
    target_version: int = Field(ge=0, description="v*: the gold version to restore")
    anchor_version: int | None = Field(None, description="the version that committed the anchor")
    anchor: str | None = Field(None, description="hidden from systems; kept for auditing")
    anchor_kind: str | None = None
    template: str | None = None
    probes: list[Probe] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
