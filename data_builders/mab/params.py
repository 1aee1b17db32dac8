"""MemoryAgentBench's build parameters and their defaults (the one place they are written)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, field_validator

from data_builders.mab.source import DEFAULT_REVISION


class MabParams(BaseModel):
    """``dataset.params`` of a MemoryAgentBench run, and the flags of ``chronobench build
    mab``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    revision: str = Field(
        DEFAULT_REVISION, description="hub dataset commit (a 40-hex sha, never a branch)"
    )
    chunk_size: PositiveInt = Field(512, description="context chunk per write")
    chunk_unit: Literal["chars", "tokens"] = Field(
        "tokens", description="unit of chunk_size (tokens: whitespace tokens)"
    )
    max_queries_per_stream: NonNegativeInt = Field(
        40, description="rollback queries per stream; 0 = every anchor that survives the filters"
    )
    max_answerable: NonNegativeInt = Field(3, description="answerable QA probes per query")
    max_future: NonNegativeInt = Field(3, description="future-evidence QA probes per query")
    battery_qa: NonNegativeInt = Field(
        4, description="battery QA items per write (data_builders/battery.py)"
    )
    jaccard_threshold: float = Field(
        0.5, description="drop an anchor this similar to a kept one (data_builders/queries.py)"
    )
    seed: int = Field(0, description="seed of query selection and probe sampling")
    # No default: a build is one split; a run's dataset.granularity names it too.
    split: str = Field(description="the split, e.g. Accurate_Retrieval")

    @field_validator("revision")
    @classmethod
    def _a_commit(cls, rev: str) -> str:
        # A moving branch would change the data under a run silently.
        if len(rev) != 40 or any(c not in "0123456789abcdef" for c in rev):
            raise ValueError(
                f"{rev!r} is not a commit sha; pin the hub dataset to a 40-hex commit so "
                "the data cannot change under a run"
            )
        return rev
