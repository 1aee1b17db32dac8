"""MemoryAgentBench as a :class:`~data_builders.dataset.Dataset`: the ``mab`` registry
entry (one folder per split, at a pinned hub commit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chronobench.errors import ConfigError
from chronobench.published_ids import DATASET_RECORDED
from data_builders.dataset import BuildPlan, Dataset
from data_builders.mab.params import MabParams


def plan(granularity: str | None, source: str | Path | None, params: Any) -> BuildPlan:
    """One split (``params.split``, which is also the folder's granularity)."""
    from data_builders.mab.build import build_mab
    from data_builders.mab.source import load_mab_rows

    rows, src_name, sha = load_mab_rows(params.split, source, params.revision)
    return BuildPlan(params.split, src_name, sha, lambda: build_mab(params.split, rows, params))


def check(dspec: Any, where: str) -> None:
    """A run's granularity names its split (MAB folders are per split)."""
    split = dspec.params.get("split")
    if split != dspec.granularity:
        raise ConfigError(
            "config key 'dataset.granularity': MAB granularity must equal "
            f"dataset.params.split ({split!r}) [{where}]"
        )


# Which source fields feed what (recorded in every manifest).
PROVENANCE: dict[str, list[str]] = {
    "indexed": ["context (chunked, or one statement per write)"],
    "anchors": [
        "questions[i] (Accurate_Retrieval)",
        "context statements (Conflict_Resolution; also indexed: see caveats)",
        "names first seen in a chunk (Long_Range_Understanding; also indexed)",
    ],
    "probes": ["questions", "answers", "context statement pairs (counterfactual)"],
    "summary_reference": ["answers (infbench_sum: whole-book summary)"],
    "anchor_filter": [],
    "never_used": [],
}


MAB = Dataset(
    name="mab",
    params=MabParams,
    title="MemoryAgentBench (ai-hyz/MemoryAgentBench, one split)",
    plan=plan,
    provenance=PROVENANCE,
    check=check,
    # The keys every shipped MAB config gave (published run ids hash them).
    recorded=DATASET_RECORDED["mab"],
)
