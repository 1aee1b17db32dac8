"""Floors against real systems on the tiny fixture (the smoke experiment's data).

Every trivial policy (no memory, always abstain, a constant answer) must score below a
real system on the RQ2 headline, and both content-free RQ3 outputs (session dates,
generic words) below the oracle system on ROUGE-1 and content ROUGE-1. The systems run
as the runner runs them (ingest, roll back, answer directly or through the extractive
backbone), on the real store with the packaged MiniLM embedder.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from chronobench.data.io import load_built
from chronobench.protocols import GenerationParams
from chronobench.runner.metrics_io import compute_metrics
from chronobench.systems.base import SystemContext

FIXTURE = Path(__file__).parent / "fixtures" / "locomo_tiny.json"

SYSTEMS = {
    "chronomem": "chronobench.systems.chronomem:ChronoMemSystem",
    "chronomem_oracle": "chronobench.systems.chronomem:ChronoMemOracleSystem",
    "no_memory": "baselines.floors:NoMemorySystem",
    "always_abstain": "baselines.floors:AlwaysAbstainSystem",
    "constant_answer": "baselines.floors:ConstantAnswerSystem",
    "floor_session_dates": "baselines.floors:SessionDatesFloor",
    "floor_generic_words": "baselines.floors:GenericWordsFloor",
}
QA_FLOORS = ("no_memory", "always_abstain", "constant_answer")
RQ3_FLOORS = ("floor_session_dates", "floor_generic_words")


def _rows(built: Any, name: str, stores: Any) -> list[dict[str, Any]]:
    from chronobench.backbones.extractive import ExtractiveBackbone
    from chronobench.metrics import score_probe

    module, _, attr = SYSTEMS[name].partition(":")
    cls = getattr(importlib.import_module(module), attr)
    system = cls(SystemContext(params=GenerationParams(), stores=stores))
    backbone = ExtractiveBackbone()
    rows: list[dict[str, Any]] = []
    for stream in built.streams:
        system.ingest(stream)
        for q in [q for q in built.queries if q.stream_id == stream.stream_id]:
            outcome = system.rollback(q)
            for probe in q.probes:
                pred = system.answer_directly(q, probe)
                if pred is None:
                    pred = backbone.generate([system.prepare(q, probe)])[0].text
                rows.append(
                    {
                        "kind": "probe",
                        "query_id": q.query_id,
                        "stream_id": q.stream_id,
                        "gold_version": q.target_version,
                        "selected_version": outcome.selected_version,
                        "intent": q.intent,
                        "source": q.source,
                        "probe_kind": probe.kind,
                        "category": probe.category,
                        "probe": probe.model_dump(mode="json"),
                        "scores": score_probe(probe, pred),
                    }
                )
    system.close()
    return rows


@pytest.fixture(scope="module")
def metrics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    from chronobench.systems.stores import StoreProvider
    from data_builders import build_dataset

    folder = build_dataset(
        "locomo",
        granularity="session",
        source=FIXTURE,
        out_dir=tmp_path_factory.mktemp("built"),
        max_queries_per_stream=6,
        max_answerable=2,
        max_future=2,
    )
    built = load_built(folder)
    stores = StoreProvider(embedder="minilm")
    try:
        return {
            name: compute_metrics(_rows(built, name, stores))["probes"]["all"] for name in SYSTEMS
        }
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
