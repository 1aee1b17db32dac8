"""README.md's test command is what CI runs: every install step it needs, in order.

A fresh machine that follows the README must get the same passing suite as CI, so CI may
not install anything the README's command leaves out (apart from the system services that
only skip tests when absent: PostgreSQL and chromium)."""

from __future__ import annotations

import re
import shlex

from tests.conftest import REPO_ROOT


def readme_test_command() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("Run the tests", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [step.strip() for step in block.strip().split("&&")]


def ci_python_steps() -> list[str]:
    """The python / pip commands .ci/run runs, without quiet flags and redirections."""
    steps = []
    for line in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not re.match(r"^python(3)? -m (pip install|chronobench install-model|pytest)", line):
            continue
        command = re.sub(r"\s\d*>.*$", "", line.split("|", 1)[0])
        words = [w for w in shlex.split(command)
                 if w not in ("--quiet", "-p", "no:cacheprovider")]  # fmt: skip
        steps.append(" ".join(words))
    return steps


def normalise(step: str) -> str:
    return " ".join(w for w in shlex.split(step) if w not in ("--quiet",)).replace(
        "python3", "python"
    )


def test_ci_installs_nothing_the_readme_command_leaves_out() -> None:
    readme = [normalise(s) for s in readme_test_command()]
    readme = [s.replace("pip install", "python -m pip install", 1) if s.startswith("pip ") else s
              for s in readme]  # fmt: skip
    ci = [s for s in ci_python_steps() if "--upgrade pip" not in s]
    assert ci, "no python step found in .ci/run"
    wanted = [s for s in readme if s.startswith("python -m") and " venv " not in s]
    assert ci == wanted, (ci, wanted)


def test_the_readme_command_installs_every_extra_a_default_test_needs() -> None:
    command = " && ".join(readme_test_command())
    assert 'pip install -e ".[dev]"' in command
    assert "install-model smollm2" in command  # the real-model and smollm2 config tests
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    dev = pyproject.split("\ndev = [", 1)[1].split("\n]", 1)[0]
    assert '"chronobench[llm-cpu]"' in dev
    # -n needs pytest-xdist, and --dist loadfile in addopts names its option: a venv
    # without it could not even parse the test command.
    assert " -n " in command + " " and '"pytest-xdist==' in dev
    assert "--dist loadfile" in pyproject.split("[tool.pytest.ini_options]", 1)[1]


def test_the_longest_files_are_scheduled_first_and_exist() -> None:
    from tests.conftest import LONGEST_FILES

    # xdist's own reorder (files with most tests first) would undo conftest's order.
    pytest_ini = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "--no-loadscope-reorder" in pytest_ini.split("[tool.pytest.ini_options]", 1)[1]
    # A renamed file would silently lose its place at the front.
    missing = [name for name in LONGEST_FILES if not (REPO_ROOT / "tests" / name).is_file()]
    assert not missing, f"tests/conftest.py LONGEST_FILES names missing files: {missing}"
    assert len(set(LONGEST_FILES)) == len(LONGEST_FILES)


def test_every_test_file_the_ci_script_and_the_docs_cite_exists() -> None:
    cited = {}
    for path in [
        REPO_ROOT / ".ci" / "run",
        REPO_ROOT / "README.md",
        *(REPO_ROOT / "docs").glob("*.md"),
    ]:
        for name in re.findall(r"tests/[\w/]+\.py", path.read_text(encoding="utf-8")):
            cited.setdefault(name, path.relative_to(REPO_ROOT))
    assert cited, "no test file cited anywhere"
    missing = {
        name: str(where) for name, where in cited.items() if not (REPO_ROOT / name).is_file()
    }
    assert not missing, f"cited test files that do not exist: {missing}"
