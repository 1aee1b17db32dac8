"""LoCoMo's build parameters and their defaults (the one place they are written)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from data_builders.uniqueness import DEFAULT_MIN_WEIGHT, DEFAULT_SHARE


class LocomoParams(BaseModel):
    """``dataset.params`` of a LoCoMo run, and the flags of ``chronobench build locomo``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_queries_per_stream: NonNegativeInt = Field(
        40, description="rollback queries per stream; 0 = every anchor that survives the filters"
    )
    max_answerable: NonNegativeInt = Field(3, description="answerable QA probes per query")
    max_future: NonNegativeInt = Field(3, description="future-evidence QA probes per query")
    max_boundary: NonNegativeInt = Field(
        10,
        description="boundary QA probes per side (data_builders/boundary.py): answerable QA "
        "of the session at v*, future QA of the first session after it",
    )
    max_recall: NonNegativeInt = Field(
        6, description="recall probes per side ('Is it true that <observation>?')"
    )
    max_far: NonNegativeInt = Field(
        10,
        description="far probes per side (QA and recall statements, spread over sessions): "
        "earlier sessions on the keep side, sessions after the first one after v* on the "
        "forget side",
    )
    # The stream's question battery (data_builders/battery.py), per session.
    battery_qa: NonNegativeInt = Field(8, description="battery QA items per session")
    battery_recall: NonNegativeInt = Field(
        4, description="battery true recall statements per session (and as many false ones)"
    )
    battery_adversarial: NonNegativeInt = Field(
        1, description="battery category-5 items per session"
    )
    jaccard_threshold: float = Field(
        0.5, description="drop an anchor this similar to a kept one (data_builders/queries.py)"
    )
    annotation_share: float = Field(
        DEFAULT_SHARE,
        description="drop an anchor when one annotation record of another episode covers "
        "this share of its key-term weight (data_builders/uniqueness.py)",
    )
    annotation_min_weight: float = Field(
        DEFAULT_MIN_WEIGHT, description="drop an anchor whose key terms weigh less in all"
    )
    seed: int = Field(0, description="seed of query selection and probe sampling")
    strict: bool = Field(False, description="fail on unknown evidence ids")
