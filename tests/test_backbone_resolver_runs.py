"""The backbone request resolver through the runner: a cell with a scripted LLM, then the
tiny random local model, parsed or fallen back, end to end on CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chronobench.spec import spec_from_config
from chronomem import UncertainRequestError
from chronomem.backbone_resolver import (
    RESOLVE_TASK,
    BackboneResolver,
    Candidate,
    parse_choice,
)
from tests.test_backbone_resolver import REQUEST, _cfg, _store

# ---- through the runner: a scripted LLM, then the tiny random model ---------------------


class PickSecond:
    """An LLM stand-in: answers resolver prompts with "2" and every question with a
    fixed sentence."""

    name = "pick_second"

    def __init__(self, model: str = "pick-second") -> None:
        self.model = model
        self.tasks: list[str] = []

    def generate(self, requests: Any) -> list[Any]:
        from chronobench.protocols import Completion

        self.tasks += [r.task for r in requests]
        return [Completion("2" if r.task == RESOLVE_TASK else "Not mentioned.") for r in requests]


def _cell(
    compose_cells: Any, dirs: dict[str, Path], tmp_path: Path, *overrides: str, task: str = "qa"
) -> tuple[Any, Path]:
    from chronobench.runner.cell import run_cell
    from chronobench.runner.components import resolve_cell

    cfg, ch = _cfg(compose_cells, "dataset=tiny", *overrides, task=task)
    cfg["paths"] = {
        "results_dir": str(tmp_path / "results"),
        "data_dir": str(dirs["data"]),  # the session's tiny build
        "cache_dir": str(tmp_path / "cache"),
    }
    cfg["progress"] = False
    cfg["embedder"] = {"model": "hash"}
    cell = resolve_cell(spec_from_config(cfg, choices=ch), choices=ch)
    return cell, run_cell(cell)


def _selected(run_dir: Path) -> dict[str, Any]:
    import json

    rows = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    return {r["query_id"]: r["selected_version"] for r in rows}


def test_a_cell_with_an_llm_runs_the_resolver(
    compose_cells: Any, tiny_dirs: dict[str, Path], tiny_built_dir: Path, tmp_path: Path
) -> None:
    import json

    from chronobench.backbones.registry import BACKBONES

    BACKBONES.register("pick_second", PickSecond, replace=True)
    bb = ["backbone.name=pick_second", "backbone.model=pick-second", "dataset.limit_queries=4"]
    try:
        cell, run_dir = _cell(compose_cells, tiny_dirs, tmp_path, *bb)
        _, plain_dir = _cell(compose_cells, tiny_dirs, tmp_path, *bb, "system.resolver=none")
    finally:
        BACKBONES._entries.pop("pick_second", None)
    assert "+resolver" in run_dir.name and "+resolver" not in plain_dir.name
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["spec"]["system"]["resolver"] == "backbone"
    calls = json.loads((run_dir / "volatile.json").read_text())["backbone_calls"]
    assert calls["misses"] > 0
    # Picking the second candidate moves at least one rollback off the reranker's top-1.
    picked, plain = _selected(run_dir), _selected(plain_dir)
    assert picked.keys() == plain.keys() and picked != plain
    assert cell.spec.resolver == "backbone"
    # Two leaderboard rows, never one merged row.
    from chronobench.leaderboard.build import collect_runs

    rows = collect_runs(run_dir.parent.parent, published=False, warn=False)
    assert sorted(r.system for r in rows) == ["chronomem", "chronomem+resolver"]


@pytest.fixture(scope="module")
def tiny_llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from chronobench.bench.tiny_llama import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def test_the_tiny_local_model_is_parsed_or_fallen_back(tiny_llama_dir: Path) -> None:
    from chronobench.backbones.transformers_backend import TransformersBackbone

    bb = TransformersBackbone(str(tiny_llama_dir), device="cpu", local_files_only=True)
    resolver = BackboneResolver(bb, top_k=3, max_chars=120)
    choice, reply = resolver.choose(REQUEST, [Candidate(1, "add: Ann moved to Oslo")] * 3)
    assert choice == parse_choice(reply, 3)  # whatever it says, it is read the one way
    with _store(resolver) as mem:
        try:
            plan = mem.plan_rollback_by_nl_query("app", "ann", REQUEST)
        except UncertainRequestError as exc:  # the random model said NONE
            assert "backbone found none" in str(exc)
        else:
            assert plan.evidence["resolver"]["status"] in ("picked", "fallback")


def test_a_cell_with_the_tiny_local_model_runs_end_to_end(
    compose_cells: Any,
    tiny_dirs: dict[str, Path],
    tiny_built_dir: Path,
    tmp_path: Path,
    tiny_llama_dir: Path,
) -> None:
    _, run_dir = _cell(
        compose_cells,
        tiny_dirs,
        tmp_path,
        "backbone=transformers",
        f"backbone.model={tiny_llama_dir}",
        "+backbone.params.local_files_only=true",
        "backbone.params.device=cpu",
        "backbone.generation.max_new_tokens=4",
        "dataset.limit_queries=1",
    )
    assert "__chronomem+resolver__transformers-" in run_dir.name
    assert _selected(run_dir)  # rows were written: each rollback picked, fell back or refused
