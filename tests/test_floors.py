"""Floors against real systems on the tiny fixture (the smoke experiment's data).

Every trivial policy (no memory, always abstain, a constant answer) must score below a
real system on the RQ2 headline, and both content-free RQ3 outputs (session dates,
generic words) below the oracle system on ROUGE-1 and content ROUGE-1. The systems run
through the runner's generation loop (the sealed protocol: public writes, request text,
question texts; the oracles through the oracle channel), on the real store with the
packaged MiniLM embedder.
"""

from __future__ import annotations

from typing import Any

import pytest

from chronobench.runner.metrics_io import compute_metrics
from chronobench.systems import is_oracle
from tests._protocol_fixtures import build_tiny, make_system, run_system

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
def metrics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    from chronobench.systems.stores import StoreProvider

    built = build_tiny(tmp_path_factory.mktemp("built"))
    logs = tmp_path_factory.mktemp("logs")
    stores = StoreProvider(embedder="minilm")
    try:
        out = {}
        for name in SYSTEMS:
            system = make_system(name, stores)
            rows = run_system(built, system, logs / f"{name}.jsonl", oracle=is_oracle(name))
            out[name] = compute_metrics(rows)["probes"]["all"]
        return out
    finally:
        stores.close()


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
