"""LoCoMo as a :class:`~data_builders.dataset.Dataset`: the ``locomo`` registry entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chronobench.hashing import file_sha256
from chronobench.published_ids import DATASET_RECORDED
from data_builders.dataset import BuildPlan, Dataset
from data_builders.locomo.params import LocomoParams
from data_builders.locomo.streams import GRANULARITIES


def plan(granularity: str | None, source: str | Path | None, params: Any) -> BuildPlan:
    """One granularity (the first of :data:`GRANULARITIES` when none) of locomo10.json."""
    from data_builders.locomo.build import build_locomo
    from data_builders.locomo.source import resolve_locomo_source

    gran = granularity or GRANULARITIES[0]
    src = resolve_locomo_source(source)
    return BuildPlan(gran, src.name, file_sha256(src), lambda: build_locomo(src, gran, params))


# Which source fields feed what (recorded in every manifest).
PROVENANCE: dict[str, list[str]] = {
    "indexed": [
        "conversation.session_N[*].speaker/text/blip_caption (session, turn)",
        "observation.session_N_observation (observation)",
    ],
    "anchors": ["event_summary.events_session_N", "qa[*].question"],
    "probes": ["qa[*] (question, answer, adversarial_answer, category, evidence)"],
    "summary_reference": ["event_summary.events_session_N (+ date)"],
    # data_builders/uniqueness.py decides which anchors single out one episode.
    "anchor_filter": [
        "event_summary.events_session_N",
        "observation.session_N_observation (text, cited dialog ids; not at observation)",
        "qa[*].question, qa[*].evidence",
    ],
    "never_used": ["session_summary"],
}


LOCOMO = Dataset(
    name="locomo",
    params=LocomoParams,
    title="LoCoMo (locomo10.json)",
    plan=plan,
    provenance=PROVENANCE,
    granularities=GRANULARITIES,
    # The keys every shipped LoCoMo config gave (published run ids hash them).
    recorded=DATASET_RECORDED["locomo"],
)
