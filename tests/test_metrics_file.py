"""The typed metrics.json (chronobench/results/metrics_file.py) and the metric declarations
(chronobench/metrics/catalog.py): every committed file reads into the model and writes back
byte for byte; the declarations keep the tables' column order."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronobench.fileio import dump_json
from chronobench.metrics.catalog import metrics
from chronobench.results.metrics_file import Breakdown, MetricsFile, RunMetrics, Stat
from chronobench.results.version import RESULTS_SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "results").glob("**/metrics.json"))


def test_every_committed_metrics_file_round_trips_byte_for_byte():
    assert FILES, "no committed metrics.json found under results/"
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        if f'"schema_version": "{RESULTS_SCHEMA_VERSION}"' not in text:
            continue  # older schemas are migrated on read (load_run), never rewritten
        model = MetricsFile.model_validate_json(text)
        assert dump_json(model.to_json()) == text, path


def test_unknown_sections_are_refused():
    with pytest.raises(ValueError):
        RunMetrics.model_validate({"selection": {}, "surprise": {}})


def test_merged_keeps_both_runs_fields():
    st = Stat(n=1, n_distinct=1, n_clusters=1, mean=1.0, ci_low=1.0, ci_high=1.0)
    qa = Breakdown.model_validate({"all": {"rc_qa": st}, "restored": {"selected_exact": st}})
    summary = Breakdown.model_validate({"all": {"rouge1": st}, "by_intent": {}})
    out = qa.merged(summary)
    assert set(out.all) == {"rc_qa", "rouge1"}
    assert set(out.to_json()) == {"all", "restored", "by_intent"}


def test_metric_declarations_keep_table_order_and_name_their_scorer():
    names = [m.name for m in metrics()]
    assert names == [
        "recall_at_1", "recall_at_k", "scope_at_k", "mrr",
        "rc_qa", "rc_qa_a", "rc_qa_b", "rc_qa_a_zero", "qa_f1", "future_abstain",
        "future_leak", "adversarial_acc", "recall_acc", "recall_forget", "qa_abstained",
        "final_correct",
        "last_session_coverage", "session_coverage", "rouge1", "content_rouge1", "specific_rouge1",
        "summary_leakage",
    ]  # fmt: skip
    # Each is declared on its scorer, a function of a chronobench.metrics module.
    assert all(m.scorer.__module__.startswith("chronobench.metrics.") for m in metrics())
    for section in ("selection", "rq2", "rq3"):
        assert sum(m.main for m in metrics() if m.section == section) == 1
