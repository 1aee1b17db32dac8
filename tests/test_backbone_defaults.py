"""A backbone option's default is written once, in its constructor's signature: a
backbone config file states only the params that deviate from it, and a run's spec
records the entry's ``recorded`` params whether the config states them or not (so
published run ids stay as they were)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
import yaml

from chronobench.backbones.registry import BACKBONES, checked_params
from chronobench.errors import ConfigError
from chronobench.runner.components import normalised_backbone
from chronobench.spec import spec_from_config, spec_sha256

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _defaults(name: str) -> dict[str, Any]:
    """The constructor defaults of backbone ``name``."""
    params = inspect.signature(BACKBONES.entry(name).load()).parameters
    return {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}


def _restated(data: dict[str, Any]) -> list[str]:
    """The ``params`` of a backbone config whose value is its constructor's default (an
    interpolation, ``${...}``, is never a restated default)."""
    defaults = _defaults(data["name"])
    return [
        f"params.{key}"
        for key, value in (data.get("params") or {}).items()
        if not (isinstance(value, str) and "${" in value)
        and key in defaults
        and defaults[key] == value
    ]


def test_no_backbone_config_restates_a_constructor_default() -> None:
    problems = []
    for path in sorted((CONFIGS / "backbone").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        where = path.relative_to(CONFIGS.parent)
        problems += [f"{where}: {key}" for key in _restated(data)]
    assert not problems, "these keys restate the backbone constructor's default: " + ", ".join(
        problems
    )


def test_a_restated_param_is_named() -> None:
    data = {"name": "vllm", "params": {"dtype": "auto", "max_model_len": 4096, "seed": "${seed}"}}
    assert _restated(data) == ["params.dtype"]
    assert _restated({"name": "smollm2", "params": {"threads": 2, "batch_size": 1}}) == [
        "params.batch_size"
    ]


def test_recorded_params_have_a_constructor_default() -> None:
    # A typo in a registration's recorded list would silently record nothing.
    for name in BACKBONES.names():
        entry = BACKBONES.entry(name)
        missing = set(entry.meta.get("recorded", ())) - set(_defaults(name))
        assert not missing, f"backbone {name!r} records params its constructor lacks: {missing}"


def test_recorded_params_are_filled_and_others_only_when_given() -> None:
    assert checked_params("smollm2", "smollm2", {}, where="w") == {"threads": 1, "batch_size": 1}
    assert checked_params("smollm2", "smollm2", {"threads": 2}, where="w") == {
        "threads": 2,
        "batch_size": 1,
    }
    given = {"max_model_len": 4096, "seed": 3}
    vllm = checked_params("vllm", "m", given, where="w")
    assert vllm == {
        "tensor_parallel_size": 1,
        "dtype": "auto",
        "gpu_memory_utilization": 0.9,
        **given,
    }
    # Not recorded unless given: the spec names what the config chose.
    assert "use_tqdm" not in vllm
    assert checked_params("vllm", "m", {**given, "use_tqdm": False}, where="w")["use_tqdm"] is False
    assert checked_params("extractive", "extractive-v1", {}, where="w") == {}
    with pytest.raises(ConfigError, match=r"backbone\.thread.*configs/backbone/smollm2\.yaml"):
        checked_params("smollm2", "smollm2", {"thread": 2}, where="configs/backbone/smollm2.yaml")


def test_a_stated_default_and_a_left_out_one_are_the_same_run(compose_cells) -> None:
    (cfg, choices), *_ = compose_cells(["experiment=single", "backbone=smollm2"])
    left_out = normalised_backbone(spec_from_config(cfg, choices=choices), choices)
    cfg["backbone"]["params"] = {"threads": 1, "batch_size": 1}
    stated = normalised_backbone(spec_from_config(cfg, choices=choices), choices)
    assert left_out.backbone.params == {"threads": 1, "batch_size": 1}
    assert spec_sha256(stated) == spec_sha256(left_out)
    assert stated.recorded() == left_out.recorded()


def test_a_dotted_override_sets_a_param_the_config_leaves_out(compose_cells) -> None:
    (cfg, _), *_ = compose_cells(
        ["experiment=single", "backbone=smollm2", "backbone.params.threads=2"]
    )
    assert cfg["backbone"]["params"] == {"threads": 2}
