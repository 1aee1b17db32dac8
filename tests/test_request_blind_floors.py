"""Request-blind floors lose the headlines with separated cluster-bootstrap intervals
(issue 15, docs/metrics.md "Floors").

The floors are the stand-ins of ``scripts/request_blind_floors.py`` (restore a fixed
fraction, version 1 or a random version and read as ChronoMem does; the first N words
of session 1 or of the stream; the content-free RQ3 texts). RQ3 is scored offline on the
real LoCoMo build: ChronoMem's summary path is replayed at each floor's version, and a
test checks that replay against the runner's own oracle cell. RQ2 runs the floors
through the runner on a slice of real LoCoMo (every conversation, a few queries each).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT


def _script() -> Any:
    path = REPO_ROOT / "scripts" / "request_blind_floors.py"
    spec = importlib.util.spec_from_file_location("request_blind_floors", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FLOORS = _script()


def _stats(rows: list[dict[str, Any]], field: str) -> dict[str, Any]:
    from chronobench.runner.metrics_io import compute_metrics

    return compute_metrics(rows)["probes"]["all"][field]


@pytest.fixture(scope="module")
def locomo_session(tmp_path_factory: pytest.TempPathFactory, locomo_path: Path) -> Any:
    """The real LoCoMo build at session granularity (the main job's RQ2/RQ3 data)."""
    from chronobench.data.io import load_built
    from data_builders import build_dataset

    out = tmp_path_factory.mktemp("locomo")
    return load_built(
        build_dataset("locomo", granularity="session", source=locomo_path, out_dir=out)
    )


@pytest.mark.slow
def test_offline_summary_replay_is_the_oracle_cell(tiny_run, tiny_built) -> None:
    folder = tiny_run("task=summary", "system=chronomem_oracle")
    streams = {s.stream_id: s for s in tiny_built.streams}
    rows = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert rows
    for r in rows:
        probe = r["probe"]
        replay = FLOORS.chronomem_summary(
            streams[r["stream_id"]], r["gold_version"], probe["question"]
        )
        assert replay == r["prediction"], r["sample_id"]


@pytest.mark.slow  # real LoCoMo, ~2,000 replayed summaries
def test_rq3_oracle_beats_every_floor_with_separated_intervals(locomo_session: Any) -> None:
    predictors = FLOORS.offline_predictors()
    stats = {
        name: _stats(FLOORS.summary_rows(locomo_session, predict), "session_coverage")
        for name, predict in predictors.items()
    }
    oracle = stats.pop("chronomem_oracle")
    assert oracle["n_clusters"] == 10 and oracle["mean"] > 0.1
    for name, floor in stats.items():
        assert floor["ci_high"] < oracle["ci_low"], (name, floor, oracle)
    # ROUGE-1, the old headline, is what verbatim text wins (why it is no longer one).
    rouge = {
        name: _stats(FLOORS.summary_rows(locomo_session, predictors[name]), "rouge1")["mean"]
        for name in ("chronomem_oracle", "floor_session1_words_150")
    }
    assert rouge["floor_session1_words_150"] > rouge["chronomem_oracle"]
