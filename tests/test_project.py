"""Project-level checks: README <-> CI sync, CLI help without torch, and every config
composes with Hydra's compose API and instantiates (lightning-hydra-template's test):
every option of every group and every experiment preset."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, config_options, hydra_context

CONFIG_DIR = REPO_ROOT / "configs"
GROUPS = ["dataset", "system", "backbone", "retriever", "reranker", "task"]
# Options that only make sense together: the repair track's dataset, task and a method
# (its cells name a repair method, not a benchmark system; see experiment/repair.yaml).
_REPAIR_METHOD = ["~system", "+system.name=dgr"]
COMPANIONS = {
    ("dataset", "repair_controlled"): ["task=repair", *_REPAIR_METHOD],
    ("task", "repair"): ["dataset=repair_controlled", *_REPAIR_METHOD],
    # The memory-systems track names its system only (experiment/peers.yaml).
    ("task", "peers"): ["~system", "+system.name=chronomem"],
    # RQ4 (experiment/selective.yaml): LoCoMo turns, a row name only.
    ("task", "selective"): ["dataset=locomo_turn", "~system", "+system.name=chronomem_selective"],
}


def _readme_commands() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text()
    setup = text.split("## Set-up", 1)[1].split("## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", setup)


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one():
    cmds = _readme_commands()
    assert len(cmds) == 2, cmds
    main_cmd, test_cmd = cmds
    assert main_cmd.endswith("python -m chronobench run")
    assert test_cmd.endswith("python -m pytest -q -n 2")
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    # CI installs the same way (torch first) and runs the same pytest command.
    assert "pip install --quiet torch==2.13.0" in ci
    assert 'pip install --quiet -e ".[dev]"' in ci
    assert "python -m pytest -q" in ci


def test_help_lists_subcommands_and_imports_no_torch():
    code = (
        "import sys, io, contextlib\n"
        "from chronobench.commands import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    rc = main(['--help'])\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'vllm', 'transformers') if m in sys.modules]\n"
        "print(rc, heavy)\n"
        "print(buf.getvalue())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True
    ).stdout
    assert out.startswith("0 []"), out
    for sub in ("run", "build", "score", "leaderboard", "bench", "demo"):
        assert sub in out


def test_unknown_command_is_a_clear_error(capsys):
    from chronobench.commands import main

    assert main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err


def test_config_groups_mirror_registries():
    from chronobench.backbones import available_backbones
    from chronobench.systems import system_names

    assert set(config_options("system")) <= set(system_names())
    names = {Path(p).stem.split("_")[0] for p in config_options("backbone")}
    assert names <= set(available_backbones())


def _cases() -> list:
    # Loading torch and a model's weights takes seconds, even for the tiny local model.
    slow = {("backbone", "transformers")}
    cases = [
        pytest.param(
            ["experiment=single", f"{g}={o}", *COMPANIONS.get((g, o), [])],
            id=f"{g}={o}",
            marks=[pytest.mark.slow] if (g, o) in slow else [],
        )
        for g in GROUPS
        for o in config_options(g)
    ]
    return cases + [
        pytest.param([f"experiment={e}"], id=f"experiment={e}")
        for e in config_options("experiment")
    ]


def _compose_with_hydra(overrides: list[str]):
    """The whole config, ``hydra`` node included, resolved as ``hydra.main`` resolves it."""
    from hydra import compose
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    with hydra_context():
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    HydraConfig().set_config(cfg)
    # What a plain run and a sweep resolve before any job starts (hydra.job.num and the
    # sweep subdir exist only inside a job).
    assert HydraConfig.get().run.dir and cfg.hydra.sweep.dir
    OmegaConf.to_container(cfg.hydra.launcher, resolve=True)
    return cfg


def _instantiate(spec) -> list[str]:
    """Build every component a cell of ``spec`` uses, through its task kind's own build (the
    code the runner's kinds carry: no data is loaded and no model weights are read);
    returns the names of what was built."""
    import importlib.util

    from chronobench.errors import MissingDependencyError
    from chronobench.runner.components import resolve_cell

    try:
        cell = resolve_cell(spec)
    except MissingDependencyError as exc:
        # A cell needing vllm without it installed: the clear error is the outcome.
        assert spec.backbone.name == "vllm" and importlib.util.find_spec("vllm") is None, exc
        assert "vllm" in str(exc)
        return ["MissingDependencyError(vllm)"]
    vllm = spec.backbone.name == "vllm"
    if {"chronomem_meaning", "chronomem_reader"} & set(spec.selectors) and not _mpnet_installed():
        # all-mpnet-base-v2 is an install of its own (400 MB): without it the clear error,
        # raised as the selector is built, is the outcome.
        with pytest.raises(MissingDependencyError, match="install-model mpnet"):
            cell.build_parts(backbone=not vllm)
        return ["MissingDependencyError(mpnet)"]
    # vllm needs a GPU and the weights: its backbone is not built here.
    built = cell.build_parts(backbone=not vllm)
    if vllm and importlib.util.find_spec("vllm") is None:
        # Without vllm the clear error is the outcome.
        with pytest.raises(MissingDependencyError, match="vllm"):
            cell.build_backbone()
    return built


def _mpnet_installed() -> bool:
    from chronobench.errors import MissingDependencyError
    from chronobench.systems.stores import meaning_model

    try:
        meaning_model("mpnet", None)
    except MissingDependencyError:
        return False
    return True


@pytest.mark.parametrize("overrides", _cases())
def test_every_config_composes_and_instantiates(overrides, compose_cells, tmp_path, request):
    """Every option of every group, and every experiment preset's every cell, composes
    into a valid spec whose components are then built as the runner builds them."""
    from chronobench.spec import spec_from_config

    cells = compose_cells(overrides)
    assert cells
    for resolved, choices in cells:
        resolved["paths"] = {k: str(tmp_path / k) for k in ("results_dir", "data_dir", "cache_dir")}
        if choices.get("backbone") == "smollm2":
            # Its converted weights: once per session, where the real-model test finds them.
            resolved["paths"]["cache_dir"] = str(request.getfixturevalue("tiny_dirs")["cache"])
        if choices.get("backbone") == "transformers":
            # The weights are the one part offline tests cannot have: a tiny local model.
            resolved["backbone"]["model"] = str(request.getfixturevalue("tiny_lm_dir"))
        if choices.get("backbone") in ("export", "replay"):
            files = {"prompts": tmp_path / "prompts.jsonl", "completions": tmp_path / "out.jsonl"}
            resolved["backbone"]["params"] = {
                k: str(v) for k, v in files.items() if k in resolved["backbone"]["params"]
            }
            files["completions"].write_text("")
        spec = spec_from_config(resolved, choices=choices)
        qwen60 = REPO_ROOT / "results" / "completions" / "llm_cpu_qwen60.jsonl"
        if choices.get("backbone") == "replay_qwen60" and not qwen60.is_file():
            # experiment=llm_cpu_qwen60's completions are still being generated (its file is
            # committed once whole, by scripts/publish_qwen60.sh): it composes, and
            # replaying it says what is missing.
            from chronobench.runner.components import resolve_cell

            with pytest.raises(FileNotFoundError, match="no completions file.*generate"):
                resolve_cell(spec).build_parts(backbone=True)
            continue
        if choices.get("backbone", "").startswith("qwen-"):
            # A 1 GB model is installed on purpose: it composes without it, and its absence
            # (or CTranslate2's, an optional extra) is a clear error when the backbone loads.
            from chronobench.errors import MissingDependencyError
            from chronobench.runner.components import resolve_cell

            with pytest.raises(
                (FileNotFoundError, MissingDependencyError), match="install-model qwen-|llm-ct2"
            ):
                resolve_cell(spec).build_parts(backbone=True)
            continue
        assert _instantiate(spec)


# Group options are packaged under their group; only the root config (experiment=single
# adds nothing to it), experiments (``@package _global_``) and launchers can set Hydra's
# own keys.
@pytest.mark.parametrize(
    "overrides",
    [[f"experiment={e}"] for e in config_options("experiment")]
    + [["experiment=single", f"hydra/launcher={o}"] for o in config_options("hydra/launcher")],
    ids=lambda o: o[-1],
)
def test_hydra_settings_resolve(overrides):
    cfg = _compose_with_hydra(overrides)
    launcher = next(
        (o.split("=", 1)[1] for o in overrides if o.startswith("hydra/launcher=")), None
    )
    if launcher is not None:
        from hydra.utils import get_class

        pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
        assert get_class(cfg.hydra.launcher._target_).__name__ == "SlurmLauncher"
        assert cfg.hydra.launcher.gpus_per_node == 1
