"""Datasets are registry entries carrying their params model (the defaults), check and
builder: dataset configs restate no default, and a plug-in dataset joins through the
``chronobench.datasets`` entry-point group with its own builder and params model."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, PositiveInt

from chronobench import plugins
from chronobench.errors import ConfigError
from chronobench.runner.dataset_registry import DATASETS
from data_builders import LOCOMO, Dataset
from data_builders.locomo.params import LocomoParams
from tests.conftest import CONFIG_DIR, REPO_ROOT

TINY = REPO_ROOT / "tests" / "fixtures" / "locomo_tiny.json"


def restated(path: Path) -> list[str]:
    """``file: dataset.params.key`` for each param of a dataset config equal to its
    registered params model's default."""
    cfg = yaml.safe_load(path.read_text()) or {}
    defaults = DATASETS.entry(cfg["name"]).load().defaults()
    return [
        f"{path.name}: dataset.params.{key}={value!r} restates the default; remove it"
        for key, value in (cfg.get("params") or {}).items()
        if key in defaults and type(value) is type(defaults[key]) and value == defaults[key]
    ]


def test_dataset_configs_carry_only_deviations_from_the_defaults(tmp_path):
    found = [line for p in sorted((CONFIG_DIR / "dataset").glob("*.yaml")) for line in restated(p)]
    assert not found, "\n".join(found)
    bad = tmp_path / "mine.yaml"
    bad.write_text("name: locomo\ngranularity: session\nparams:\n  max_boundary: 10\n  seed: 3\n")
    assert restated(bad) == [
        "mine.yaml: dataset.params.max_boundary=10 restates the default; remove it"
    ]


class ToyParams(BaseModel):
    """A plug-in dataset's build parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    per_stream: PositiveInt = 2
    boundary: PositiveInt = 1


def _toy_plan(granularity, source, params):
    # A plug-in's builder; this one reuses LoCoMo's on the tiny fixture.
    inner = LocomoParams(max_queries_per_stream=params.per_stream, max_boundary=params.boundary)
    return LOCOMO.plan(granularity, TINY, inner)


TOY = Dataset(
    name="toy", params=ToyParams, plan=_toy_plan, granularities=("session",),
    recorded=("per_stream",), title="a plug-in dataset",
)  # fmt: skip


@pytest.fixture
def toy_installed(monkeypatch):
    """The ``toy`` dataset installed under chronobench.datasets (rediscovered, then the
    registry restored)."""
    ep = EntryPoint("toy", "tests.test_dataset_registry:TOY", "chronobench.datasets")
    monkeypatch.setattr(
        plugins, "_entry_points", lambda g: [ep] if g == "chronobench.datasets" else []
    )
    monkeypatch.setattr(DATASETS, "_entries", dict(DATASETS._entries))
    monkeypatch.setattr(DATASETS, "_found", {})
    monkeypatch.setattr(DATASETS, "_discovered", False)


def test_a_plugin_dataset_declares_its_builder_and_params(toy_installed, tmp_path, capsys):
    from chronobench.commands.build import main as build_main
    from chronobench.runner.components import normalised_dataset
    from chronobench.runner.datasets import load_run_data
    from chronobench.spec import RunSpec

    toy = DATASETS.entry("toy").load()  # the entry point's object (this module, imported)
    assert "toy" in DATASETS.names() and toy.params.__name__ == "ToyParams"
    base = {
        "system": {"name": "chronomem"}, "backbone": {"name": "extractive", "model": "x"},
        "task": {"kind": "benchmark"},
    }  # fmt: skip
    spec = RunSpec.model_validate({**base, "dataset": {"name": "toy", "granularity": "session"}})
    # Normalised by its params model: the recorded key filled, the others left out.
    dspec = normalised_dataset(spec).dataset
    assert dspec.params == {"per_stream": 2}
    bad = {**base, "dataset": {"name": "toy", "granularity": "session", "params": {"nope": 1}}}
    with pytest.raises(ConfigError, match=r"dataset\.params\.nope"):
        normalised_dataset(RunSpec.model_validate(bad))
    data = load_run_data(dspec, tmp_path)  # built by its own plan
    assert data.manifest["dataset"] == "toy" and data.manifest["parameters"]["boundary"] == 1
    assert data.streams and all(
        len([q for q in data.queries if q.stream_id == s.stream_id]) <= 2 for s in data.streams
    )
    # `chronobench build toy`: its flags are its params model's fields.
    assert build_main(["toy", "--per-stream", "1", "--out", str(tmp_path / "cli")]) == 0
    assert "built " in capsys.readouterr().out
