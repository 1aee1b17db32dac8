"""Floors against real systems on the tiny fixture (the smoke experiment's data).

Every trivial policy (no memory, always abstain, a constant answer) must score below a
real system on the RQ2 headline, and both content-free RQ3 outputs (session dates,
generic words) below the oracle system on ROUGE-1 and content ROUGE-1. Each system is
one cell the runner runs (``experiment=single dataset=tiny task=generation``: the real
store, the packaged MiniLM embedder, the extractive backbone).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

SYSTEMS = (
    "chronomem",
    "chronomem_oracle",
    "no_memory",
    "always_abstain",
    "constant_answer",
    "floor_session_dates",
    "floor_generic_words",
)
QA_FLOORS = ("no_memory", "always_abstain", "constant_answer")
RQ3_FLOORS = ("floor_session_dates", "floor_generic_words")


@pytest.fixture(scope="module")
def metrics(tiny_run) -> dict[str, dict[str, Any]]:
    """Each system's probe metrics from the runner's own cell (task=generation)."""
    out = {}
    for name in SYSTEMS:
        folder = tiny_run("task=generation", f"system={name}")
        out[name] = json.loads((folder / "metrics.json").read_text())["metrics"]["probes"]["all"]
    return out


def _mean(stats: dict[str, Any], field: str) -> float:
    return float((stats.get(field) or {}).get("mean") or 0.0)


@pytest.mark.slow
def test_every_floor_scores_below_a_real_system_on_the_headline(
    metrics: dict[str, dict[str, Any]],
) -> None:
    real = max(_mean(metrics[s], "rc_qa") for s in ("chronomem", "chronomem_oracle"))
    assert real > 0.0
    for floor in QA_FLOORS + RQ3_FLOORS:
        assert _mean(metrics[floor], "rc_qa") < real, floor
    assert _mean(metrics["always_abstain"], "rc_qa") == 0.0


@pytest.mark.slow
def test_rq3_floors_score_below_the_oracle(metrics: dict[str, dict[str, Any]]) -> None:
    oracle = metrics["chronomem_oracle"]
    for floor in RQ3_FLOORS:
        for field in ("rouge1", "content_rouge1", "specific_rouge1"):
            assert _mean(metrics[floor], field) < _mean(oracle, field), (floor, field)
    # Content-free text names no post-v* event: it cannot leak.
    for floor in RQ3_FLOORS:
        assert _mean(metrics[floor], "summary_leakage") <= _mean(oracle, "summary_leakage")


@pytest.mark.slow
def test_run_reports_distinct_counts_and_clusters(metrics: dict[str, dict[str, Any]]) -> None:
    stats = metrics["chronomem"]["qa_f1"]
    assert stats["n_clusters"] >= 1
    assert 1 <= stats["n_distinct"] <= stats["n"]
    assert metrics["chronomem"]["rc_qa"]["n"] >= 1
