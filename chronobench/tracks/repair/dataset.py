"""The repair track's dataset as a :class:`~data_builders.dataset.Dataset` (the
``repair`` registry entry): its sizes and their defaults, and its subsets. Its cases are
built and read by the track itself (:func:`chronobench.tracks.repair.cases.load_or_build`), so
it has no builder here."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from chronobench.published_ids import DATASET_RECORDED
from data_builders.dataset import Dataset


class RepairParams(BaseModel):
    """``dataset.params`` of a repair cell."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_controlled: PositiveInt = Field(150, description="seeded controlled cases (one fault)")
    n_stress: PositiveInt = Field(50, description="multi-fault stress cases (2-4 faults)")


REPAIR = Dataset(
    name="repair",
    params=RepairParams,
    title="the repair track's seeded cases",
    # The subset a cell scores: the repair-3 control sets, and the sets whose diagnosis
    # must be earned (repair-4, chronobench/tracks/repair/generate_earned.py) and those
    # with two advisory chains per domain (repair-5); the same histories read through
    # retrieval (repair-6, chronobench/tracks/repair/retrieval.py).
    granularities=(
        "controlled",
        "stress",
        "earned_controlled",
        "earned_stress",
        "earned2_controlled",
        "earned2_stress",
        "retrieval_controlled",
        "retrieval_stress",
    ),
    # The keys the shipped config always gave (published run ids hash them).
    recorded=DATASET_RECORDED["repair"],
)
