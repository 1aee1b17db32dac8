"""Project-level checks: README <-> CI sync, CLI help without torch, every config composes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

CONFIG_DIR = REPO_ROOT / "configs"
GROUPS = ["dataset", "system", "backbone", "retriever", "reranker", "task", "experiment"]


def _readme_commands() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text()
    setup = text.split("## Set-up", 1)[1].split("## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", setup)


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one():
    cmds = _readme_commands()
    assert len(cmds) == 2, cmds
    main_cmd, test_cmd = cmds
    assert main_cmd.endswith("python -m chronobench run")
    assert test_cmd.endswith("python -m pytest -q")
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


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


def test_config_groups_mirror_registries():
    from chronobench.systems import system_names

    assert set(_options("system")) <= set(system_names())
    from chronobench.backbones import available_backbones

    names = {Path(p).stem.split("_")[0] for p in _options("backbone")}
    assert names <= set(available_backbones())
