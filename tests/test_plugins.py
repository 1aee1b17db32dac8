"""Plug-ins from outside the package: entry points, labels and orders on the registration,
collisions naming both sources, the user config search path, and a separate package
installed into a folder and run through the command line with no edit to chronobench."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from chronobench import plugins
from chronobench.errors import ConfigError, UnknownNameError
from chronobench.metrics.catalog import metric_plugin
from chronobench.plugins import Plugin, PluginError
from chronobench.registry import BUILTIN, Registry, RegistryCollisionError
from tests.conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "plugin"
GROUP = "chronobench.tests"

# Entry-point targets of the unit tests below.
DEMO = Plugin("chronobench.backbones.scripted:ScriptedBackbone", label="Demo", order=15)
OTHER = Plugin("chronobench.backbones.extractive:ExtractiveBackbone")


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch):
    """Pretend these entry points are installed: ``installed(("name", "module:attr"), ...)``."""

    def install(*eps: tuple[str, str]) -> Registry:
        found = [EntryPoint(name, value, GROUP) for name, value in eps]
        monkeypatch.setattr(plugins, "_entry_points", lambda group: found)
        reg = Registry("backbone", entry_points=GROUP)
        reg.register("builtin", "chronobench.backbones.scripted:ScriptedBackbone", source=BUILTIN)
        return reg

    return install


def test_entry_points_join_the_registry_lazily_with_label_and_order(installed, monkeypatch):
    reg = installed(
        ("demo", "tests.test_plugins:DEMO"),
        ("bare", "chronobench.backbones.extractive:ExtractiveBackbone"),  # the class itself
    )
    loads: list[str] = []
    real = plugins.Found.load
    monkeypatch.setattr(plugins.Found, "load", lambda self: loads.append(self.name) or real(self))
    assert reg.names() == ["bare", "builtin", "demo"] and loads == []  # names load nothing
    entry = reg.entry("demo")
    assert (entry.label, entry.order, entry.row_label) == ("Demo", 15, "Demo")
    assert entry.target == "chronobench.backbones.scripted:ScriptedBackbone"
    assert "entry point 'demo = tests.test_plugins:DEMO'" in entry.source
    assert reg.entry("bare").row_label == "bare" and loads == ["demo", "bare"]
    # Ordered rows first, by order; then the rest by name.
    assert reg.ordered(["bare", "builtin", "demo"]) == ["demo", "bare", "builtin"]


def test_a_name_collision_names_both_sources(installed):
    reg = installed(("builtin", "tests.test_plugins:DEMO"))
    with pytest.raises(RegistryCollisionError) as err:
        reg.names()
    msg = str(err.value)
    assert "'builtin' is registered twice" in msg
    assert "chronobench.backbones.scripted:ScriptedBackbone (from chronobench (built in))" in msg
    assert "entry point 'builtin = tests.test_plugins:DEMO'" in msg
    with pytest.raises(RegistryCollisionError):  # every later lookup says so too
        reg.entry("builtin")
    reg = installed(("twin", "tests.test_plugins:DEMO"), ("twin", "tests.test_plugins:OTHER"))
    with pytest.raises(RegistryCollisionError, match=r"DEMO.*and by.*OTHER"):
        reg.names()
    # The same target found twice (one package on the path twice) is no collision.
    reg = installed(("twin", "tests.test_plugins:DEMO"), ("twin", "tests.test_plugins:DEMO"))
    assert "twin" in reg.names()
    # An in-process registration that takes an installed plug-in's name is refused too.
    reg = installed(("demo", "tests.test_plugins:DEMO"))
    reg.names()
    with pytest.raises(RegistryCollisionError, match="'demo' is registered twice"):
        reg.register("demo", "chronobench.backbones.extractive:ExtractiveBackbone")


def test_a_broken_plugin_fails_only_when_used(installed):
    reg = installed(("broken", "no_such_module_xyz:THING"), ("demo", "tests.test_plugins:DEMO"))
    assert "broken" in reg.names()
    assert reg.entry("demo").label == "Demo"
    with pytest.raises(PluginError, match=r"entry point 'broken = no_such_module_xyz:THING'"):
        reg.entry("broken")


def test_unknown_name_names_the_entry_point_group_and_the_docs(installed):
    reg = installed()
    with pytest.raises(UnknownNameError) as err:
        reg.entry("nope")
    assert f"entry-point group '{GROUP}'" in str(err.value)
    assert "docs/plugins.md" in str(err.value)


def test_unknown_system_names_the_entry_point_group_and_the_docs():
    # Not under `installed`: the global registry would remember the fake entry points
    # (the peers are chronobench's own entry points) for the rest of the session.
    from chronobench.systems.registry import SYSTEMS

    with pytest.raises(UnknownNameError, match=r"'chronobench\.systems'.*docs/plugins\.md"):
        SYSTEMS.entry("no_such_system")


def test_the_docs_show_the_example_package_as_it_is():
    """Every file block of docs/plugins.md is the example package's file, byte for byte."""
    doc = (REPO_ROOT / "docs" / "plugins.md").read_text()
    blocks = re.findall(r"`(examples/plugin/[^`]+)`:\n\n```\w+\n(.*?)```\n", doc, re.S)
    shown = {path for path, _ in blocks}

    def built(path: Path) -> bool:  # what installing from the folder leaves there
        return any(x in ("__pycache__", "build") or x.endswith(".egg-info") for x in path.parts)

    files = {
        str(p.relative_to(REPO_ROOT)) for p in EXAMPLE.rglob("*") if p.is_file() and not built(p)
    }
    assert shown == files, (shown, files)
    for path, text in blocks:
        assert (REPO_ROOT / path).read_text() == text, path


def test_the_docs_publish_a_plugin_row_the_way_the_run_says(monkeypatch, capsys, tmp_path):
    """docs/plugins.md's publishing step names what the run's "not published" line says:
    publish=true on the run, or the leaderboard command afterwards."""
    from chronobench.commands import run as run_command
    from chronobench.runner import experiment

    monkeypatch.setattr(experiment, "run_experiment", lambda cfg, overrides: [tmp_path / "x"])
    cfg = {"publish": False, "paths": {"results_dir": str(tmp_path)}}
    run_command.run_and_publish(cfg, ["experiment=single"])
    said = capsys.readouterr().out
    assert "publish=true" in said and "python -m chronobench leaderboard" in said
    doc = (REPO_ROOT / "docs" / "plugins.md").read_text()
    step = doc.split("### 6. Publish its row\n", 1)[1].split("\n### ", 1)[0]
    assert "system=keyword_undo task=generation publish=true" in step
    assert "\npython -m chronobench leaderboard\n" in step
    assert "is added to that folder's" not in doc  # the old claim: added with no step


def _env(tmp_path: Path, site: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CHRONOBENCH_CONFIG_PATH",)}
    path = [str(site), *filter(None, [env.get("PYTHONPATH")])]
    return {
        **env,
        "PYTHONPATH": os.pathsep.join(path),
        "CHRONOBENCH_RESULTS": str(tmp_path / "results"),
        "CHRONOBENCH_DATA": str(tmp_path / "data"),
        "CHRONOBENCH_CACHE": str(tmp_path / "cache"),
        **extra,
    }


def _chronobench(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "chronobench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


@pytest.mark.slow
def test_an_installed_plugin_runs_through_the_command_line(tmp_path):
    # A separate package (its own pyproject, one system, one config), built and installed
    # offline into a folder of its own.
    src = tmp_path / "keyword-undo"
    shutil.copytree(
        EXAMPLE, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    )
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--no-build-isolation", "--no-index", "--target", str(site), str(src)],
        check=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert list(site.glob("chronobench_keyword_undo-*.dist-info"))
    work = tmp_path / "work"
    work.mkdir()
    configs = str(src / "configs")
    cell = ["experiment=single", "system=keyword_undo", "dataset=tiny", "task=generation"]

    proc = _chronobench(["run", *cell], _env(tmp_path, site, CHRONOBENCH_CONFIG_PATH=configs), work)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = (tmp_path / "results" / "runs").iterdir()
    assert "__keyword_undo__" in run.name
    samples = (run / "samples.jsonl").read_text().splitlines()
    assert samples and '"selected_version"' in samples[0]
    import json

    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["spec"]["system"] == {"name": "keyword_undo", "window": 20}

    # The same cell through --config-dir (no environment variable): it resumes; a
    # mistyped option is rejected by the plug-in's options model.
    env = _env(tmp_path, site)
    proc = _chronobench(["run", "--config-dir", configs, *cell], env, work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list((tmp_path / "results" / "runs").iterdir())) == 1
    proc = _chronobench(["run", "--config-dir", configs, *cell, "+system.windw=3"], env, work)
    assert proc.returncode == 2 and "system.windw" in proc.stderr, proc.stderr
    # Without the config folder the option is not found, and the error says where to look.
    proc = _chronobench(["run", *cell], env, work)
    assert proc.returncode == 2 and "--config-dir" in proc.stderr, proc.stderr

    # Its registration places its row: label and order come with the entry point, and
    # listing names imports nothing of the plug-in.
    code = (
        "import sys\n"
        "from chronobench.systems.registry import SYSTEMS\n"
        "assert 'keyword_undo' in SYSTEMS.names() and 'keyword_undo' not in sys.modules\n"
        "print(SYSTEMS.ordered(['chronomem', 'keyword_undo', 'rag_only']))\n"
        "print('keyword_undo.system' in sys.modules)\n"
        "import dataclasses\n"
        "from pathlib import Path\n"
        "from chronobench.leaderboard.build import collect_runs, render\n"
        f"runs = collect_runs(Path({str(tmp_path / 'results')!r}), published=False)\n"
        "md, _, _ = render([dataclasses.replace(r, published=True) for r in runs])\n"
        "print([line for line in md.splitlines() if 'plug-in example' in line][0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=work, env=env
    )
    assert out.returncode == 0, out.stderr[-3000:]
    ordered, imported, row = out.stdout.splitlines()[:3]
    assert ordered == "['rag_only', 'keyword_undo', 'chronomem']"
    assert imported == "False"  # the registration module only: the class is not imported
    assert row.startswith("| Keyword undo (plug-in example) |")


def test_config_folders_join_the_search_path_in_order(tmp_path, monkeypatch):
    from chronobench.errors import ConfigError
    from chronobench.paths import CONFIG_PATH_ENV
    from chronobench.runner.experiment import with_config_path

    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
    monkeypatch.setenv(CONFIG_PATH_ENV, os.pathsep.join([str(c), str(a)]))
    args = with_config_path(["-m", "experiment=single", "--cfg", "job"], [a, b])
    # After Hydra's flags that come first, before the other overrides; --config-dir
    # folders first, then the variable's (each folder once).
    assert args[0] == "-m" and args[2:] == ["experiment=single", "--cfg", "job"]
    assert args[1] == f"hydra.searchpath=['file://{a}','file://{b}','file://{c}']"
    monkeypatch.delenv(CONFIG_PATH_ENV)
    assert with_config_path(["experiment=single"]) == ["experiment=single"]
    with pytest.raises(ConfigError, match="--config-dir .*nope: not a folder"):
        with_config_path(["experiment=single"], [tmp_path / "nope"])


def test_unknown_system_on_the_command_line_says_where_systems_come_from(tmp_path):
    env = _env(tmp_path, tmp_path / "no-site")
    proc = _chronobench(["run", "experiment=single", "system.name=nope"], env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) <= 2 and "Traceback" not in proc.stderr
    assert "unknown system 'nope'" in lines[0]
    assert "entry-point group 'chronobench.systems'" in lines[0]
    assert "docs/plugins.md" in lines[0]


# A metric plug-in's scorer and registration (entry-point targets of the tests below).
def _says_hello(probe, prediction):
    return {"hello": float("hello" in prediction.lower())}


HELLO = metric_plugin(_says_hello, "rq2", "says hello", probes=("future_qa",), short="Hi")


def _metric_entry_point(monkeypatch, name: str, value: str) -> None:
    """One installed ``chronobench.metrics`` entry point, seen by a fresh view of the
    global registry (discovery runs again; monkeypatch undoes it after the test)."""
    from chronobench.metrics.catalog import METRICS

    found = [EntryPoint(name, value, plugins.GROUPS["metric"])]
    monkeypatch.setattr(plugins, "_entry_points", lambda group: found)
    monkeypatch.setattr(METRICS, "_entries", dict(METRICS._entries))
    monkeypatch.setattr(METRICS, "_found", {})
    monkeypatch.setattr(METRICS, "_discovered", False)


def test_a_metric_plugin_joins_the_registry_its_table_and_probe_scoring(monkeypatch):
    from chronobench.data.schema import Probe
    from chronobench.metrics import score_probe
    from chronobench.metrics.catalog import METRICS, section

    _metric_entry_point(monkeypatch, "hello", "tests.test_plugins:HELLO")
    assert "hello" in METRICS.names()
    rq2 = section("rq2")
    assert rq2[-1].name == "hello" and rq2[-1].label == "says hello"  # no order: last
    assert "entry point 'hello = tests.test_plugins:HELLO'" in METRICS.entry("hello").source
    probe = Probe(probe_id="p", kind="future_qa", question="q?", future_answers=["x"])
    assert score_probe(probe, "Hello there") == {
        "future_abstain": 0.0,
        "future_leak": 0.0,
        "hello": 1.0,
    }
    # Other probe kinds are scored as before.
    qa = Probe(probe_id="q", kind="qa", question="q?", answers=["x"])
    assert "hello" not in score_probe(qa, "hello")


def test_a_metric_plugin_without_a_section_is_a_clear_error(monkeypatch):
    from chronobench.metrics.catalog import metrics

    _metric_entry_point(monkeypatch, "bare", "tests.test_plugins:_says_hello")
    with pytest.raises(
        ConfigError, match=r"metric 'bare'.*needs a label and a section.*metric_plugin"
    ):
        metrics()
