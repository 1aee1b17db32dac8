"""backbone=record: a live backbone whose answers go to a completions file, so a cell
whose prompts depend on earlier replies (ChronoMem's backbone request resolver) replays
from that file with the same selections and replies, and no model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chronobench.protocols import ChatMessage, Completion, GenerationParams, GenerationRequest
from chronomem.backbone_resolver import RESOLVE_TASK


class PickSecond:
    """An LLM stand-in: "2" to every resolver prompt, one sentence to every question;
    counts what it was asked."""

    name = "pick_second"
    calls = 0

    def __init__(self, model: str = "pick-second") -> None:
        self.model = model

    def generate(self, requests: Any) -> list[Completion]:
        PickSecond.calls += len(requests)
        return [Completion("2" if r.task == RESOLVE_TASK else "Oslo.", 10, 2) for r in requests]


@pytest.fixture
def pick_second() -> Any:
    from chronobench.backbones.registry import BACKBONES

    BACKBONES.register("pick_second", PickSecond, replace=True)
    PickSecond.calls = 0
    yield PickSecond
    BACKBONES._entries.pop("pick_second", None)


def _request(text: str) -> GenerationRequest:
    return GenerationRequest(
        messages=(ChatMessage("user", text),), params=GenerationParams(max_new_tokens=4)
    )


def test_record_answers_from_the_file_first_and_adds_the_rest(
    pick_second: Any, tmp_path: Path
) -> None:
    from chronobench.backbones.offline import RecordBackbone, ReplayBackbone, prompt_id

    path = tmp_path / "c.jsonl"
    known = _request("known")
    path.write_text(json.dumps({"id": prompt_id(known), "text": "kept", "model": "m"}) + "\n")
    rec = RecordBackbone(str(path), live="pick_second", model="m")
    out = rec.generate([known, _request("new"), _request("new")])
    assert [c.text for c in out] == ["kept", "Oslo.", "Oslo."]
    assert pick_second.calls == 1  # the file's prompt and the repeat were not generated
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == 2 and lines[1]["engine"] == "pick_second" and lines[1]["model"] == "m"
    assert ReplayBackbone(str(path), "m").generate([_request("new")])[0].text == "Oslo."


def test_record_refuses_a_backbone_that_does_not_generate(tmp_path: Path) -> None:
    from chronobench.backbones.offline import RecordBackbone

    rec = RecordBackbone(str(tmp_path / "c.jsonl"), live="replay")
    with pytest.raises(ValueError, match="not a live backbone"):
        rec.generate([_request("q")])


def _cell(compose_cells: Any, dirs: dict[str, Path], out: Path, *overrides: str) -> Path:
    from chronobench.runner.cell import run_cell
    from chronobench.runner.components import resolve_cell
    from chronobench.spec import spec_from_config

    ((cfg, ch),) = compose_cells(["experiment=single", "task=qa", "dataset=tiny", *overrides])
    cfg["paths"] = {
        "results_dir": str(out),
        "data_dir": str(dirs["data"]),
        "cache_dir": str(out / "cache"),
    }
    cfg["progress"] = False
    cfg["embedder"] = {"model": "hash"}
    return run_cell(resolve_cell(spec_from_config(cfg, choices=ch), choices=ch))


def _rows(run_dir: Path) -> list[str]:
    rows = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    keep = ("query_id", "selected_version", "reply")
    return sorted(json.dumps({k: r.get(k) for k in keep}, sort_keys=True) for r in rows)


def test_a_resolver_cell_recorded_live_replays_alike(
    pick_second: Any,
    compose_cells: Any,
    tiny_dirs: dict[str, Path],
    tiny_built_dir: Path,
    tmp_path: Path,
) -> None:
    completions = tmp_path / "completions.jsonl"
    record = [
        "backbone=replay",  # the group's file; name, params and model set below
        "backbone.name=record",
        "backbone.model=pick-second",
        f"backbone.params.completions={completions}",
        "+backbone.params.live=pick_second",
        "dataset.limit_queries=3",
    ]
    live = _cell(compose_cells, tiny_dirs, tmp_path / "live", *record)
    assert "+resolver" in live.name  # the prompts depend on the resolver's replies
    recorded = [json.loads(x) for x in completions.read_text().splitlines()]
    tasks_seen = pick_second.calls
    assert recorded and tasks_seen == len(recorded)
    replay = [
        "backbone=replay",
        "backbone.model=pick-second",
        f"backbone.params.completions={completions}",
        "dataset.limit_queries=3",
    ]
    replayed = _cell(compose_cells, tiny_dirs, tmp_path / "replayed", *replay)
    rows = _rows(live)
    assert any('"selected_version": null' not in r for r in rows)
    assert any('"reply": "Oslo."' in r for r in rows)
    assert _rows(replayed) == rows
    assert pick_second.calls == tasks_seen  # the replay asked no model
