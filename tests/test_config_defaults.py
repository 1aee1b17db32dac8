"""Every option default is stated once, in its options model: a config file of the
dataset, system, backbone, retriever, reranker, task and store groups (and the root config) sets
only what deviates from it on purpose, and so do the ``task.params`` of a task config
and of an experiment preset (its ``task`` block and its suite cells) for the task kind's
params model. A key that restates a default fails, naming the file and the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from chronobench.runner.components import TASKS
from chronobench.spec import (
    BackboneSpec,
    DatasetSpec,
    RerankerSpec,
    RetrieverSpec,
    RunSpec,
    StoreSpec,
    SystemSpec,
    TaskSpec,
)
from chronobench.systems.registry import SYSTEMS

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
GROUPS: dict[str, type[BaseModel]] = {
    "backbone": BackboneSpec,
    "dataset": DatasetSpec,
    "reranker": RerankerSpec,
    "retriever": RetrieverSpec,
    "store": StoreSpec,
    "system": SystemSpec,
    "task": TaskSpec,
}


def _restated(data: dict[str, Any], model: type[BaseModel], at: str = "") -> list[str]:
    """The keys of ``data`` whose value is ``model``'s default (nested models too).
    An interpolation (``${...}``) is never a restated default."""
    found = []
    for key, value in data.items():
        fld = model.model_fields.get(key)
        if fld is None:
            continue
        sub = fld.annotation
        if isinstance(value, dict) and isinstance(sub, type) and issubclass(sub, BaseModel):
            found += _restated(value, sub, f"{at}{key}.")
            continue
        default = fld.default_factory() if fld.default_factory else fld.default  # type: ignore[call-arg]
        if default is not PydanticUndefined and default == value:
            found.append(f"{at}{key}")
    return found


def _interpolated_root_keys() -> set[str]:
    """Root keys another config reads as ``${key}``: they must exist in the config."""
    text = "\n".join(p.read_text() for p in CONFIGS.rglob("*.yaml"))
    return {k for k in RunSpec.model_fields if "${" + k + "}" in text}


def test_no_group_config_restates_a_default() -> None:
    problems = []
    for group, spec_model in GROUPS.items():
        for path in sorted((CONFIGS / group).glob("*.yaml")):
            data = yaml.safe_load(path.read_text()) or {}
            where = path.relative_to(CONFIGS.parent)
            keys = _restated(data, spec_model)
            if group == "system":
                # The system's own options model (a plug-in without one: its signature).
                options = SYSTEMS.entry(data["name"]).options
                if options is not None:
                    keys += _restated(data, options)
            problems += [f"{where}: {key}" for key in keys]
    assert not problems, "these keys restate their options model's default: " + ", ".join(problems)


def test_the_root_config_restates_no_default_but_what_the_command_line_sets() -> None:
    # Hydra overrides a root key only when the config has it (``progress=false``), so
    # the root keys a user sets on the command line stay, as does a key that another
    # config interpolates (``${seed}``); nested groups follow the rule above.
    data = yaml.safe_load((CONFIGS / "config.yaml").read_text())
    nested = {k: v for k, v in data.items() if isinstance(v, dict) and k in RunSpec.model_fields}
    problems = []
    for key, value in nested.items():
        sub = RunSpec.model_fields[key].annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            problems += [f"{key}.{k}" for k in _restated(value, sub)]
    assert not problems, f"configs/config.yaml restates defaults: {problems}"
    assert _interpolated_root_keys() <= set(data)


def test_a_restated_default_is_named() -> None:
    assert _restated({"stage": "hybrid", "candidates": 50}, RetrieverSpec) == ["stage"]
    assert _restated({"generation": {"temperature": 0.0}}, BackboneSpec) == [
        "generation.temperature"
    ]
    chronomem = SYSTEMS.entry("chronomem").options
    assert chronomem is not None
    assert _restated({"context_budget_tokens": 2000, "top_k_items": 4}, chronomem) == [
        "context_budget_tokens"
    ]


def _params_model(kind: str) -> type[BaseModel] | None:
    """The task kind's ``task.params`` model (its TASKS entry)."""
    return TASKS.entry(kind).load().params_model()


def _kind(task_option: str) -> str:
    data = yaml.safe_load((CONFIGS / "task" / f"{task_option}.yaml").read_text()) or {}
    return str(data.get("kind", TaskSpec().kind))


def _task_option(defaults: list[Any], fallback: str) -> str:
    """The task group option a defaults list (or a suite cell's overrides) picks."""
    for item in defaults:
        if isinstance(item, dict):
            for key, value in item.items():
                if key.split()[-1].strip("/") == "task" and value:
                    return str(value)
        elif isinstance(item, str) and item.lstrip("+").startswith("task="):
            return item.split("=", 1)[1]
    return fallback


def _restated_params(params: dict[str, Any], kind: str) -> list[str]:
    model = _params_model(kind)
    return [] if model is None else [f"task.params.{k}" for k in _restated(params, model)]


def test_no_task_params_restate_their_kinds_default() -> None:
    root = _task_option(yaml.safe_load((CONFIGS / "config.yaml").read_text())["defaults"], "")
    problems = []
    for path in sorted((CONFIGS / "task").glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        keys = _restated_params(data.get("params") or {}, _kind(path.stem))
        problems += [f"{path.relative_to(CONFIGS.parent)}: {key}" for key in keys]
    for path in sorted((CONFIGS / "experiment").glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        where = path.relative_to(CONFIGS.parent)
        option = _task_option(data.get("defaults") or [], root)
        given = (data.get("task") or {}).get("params") or {}
        problems += [f"{where}: {key}" for key in _restated_params(given, _kind(option))]
        for n, cell in enumerate(data.get("suite") or [], 1):
            params = {
                o.lstrip("+").split("=", 1)[0].removeprefix("task.params."): yaml.safe_load(
                    o.split("=", 1)[1]
                )
                for o in cell
                if o.lstrip("+").startswith("task.params.")
            }
            kind = _kind(_task_option(cell, option))
            problems += [f"{where} suite cell {n}: {k}" for k in _restated_params(params, kind)]
    assert not problems, "these task.params restate their kind's default: " + ", ".join(problems)


def test_a_restated_task_param_is_named() -> None:
    assert _restated_params({"targets": 2, "streams": 4}, "peers") == ["task.params.targets"]
    assert _restated_params({"noise": 0, "diagnosis": "judge"}, "repair") == ["task.params.noise"]
    assert _task_option([{"override /task": "peers"}], "all") == "peers"
    assert _task_option(["system=x", "task=repair"], "all") == "repair"
    assert _kind("peers") == "peers" and _params_model("benchmark") is None
