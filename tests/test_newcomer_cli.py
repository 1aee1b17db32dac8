"""The newcomer's path through the command line: `list`, the short `run --help`, the
did-you-mean of a misspelt option, a served backbone with no server, the `view` hint at
the end of a run, `show --json`, a closed pipe, `verify --cell` and the cells' ETA."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, config_options

PUBLISHED = REPO_ROOT / "results" / "published"


def test_list_names_every_option_of_each_kind(capsys):
    from chronobench.commands import main

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for heading in ("presets", "systems", "datasets", "tracks", "backbones"):
        assert f"{heading} " in out
    for group in ("experiment", "system", "dataset", "task", "backbone"):
        for name in config_options(group):
            assert f"\n  {name} " in out, (group, name)
    assert main(["list", "tracks"]) == 0
    tracks = capsys.readouterr().out
    assert "[repair]" in tracks and "[selective]" in tracks and "[benchmark]" in tracks
    assert "systems (run" not in tracks


def test_list_of_an_unknown_kind_suggests_the_closest(capsys):
    from chronobench.commands import main

    assert main(["list", "sytems"]) == 2
    assert "did you mean 'systems'?" in capsys.readouterr().err


def test_every_shipped_preset_has_a_one_line_summary():
    from chronobench.config_catalog import group_options

    for option in group_options("experiment"):
        assert option.summary, f"{option.path}: its first comment line is its summary"
        assert not option.summary.endswith("..."), f"{option.path}: summary too long"
        assert "issue" not in option.summary


def test_summary_is_the_first_sentence_of_the_first_paragraph(tmp_path):
    from chronobench.config_catalog import summary_of

    path = tmp_path / "x.yaml"
    path.write_text(
        "# @package _global_\n# One cell (issue 12; docs/x.md), e.g. `run a=b`. Then\n"
        "# more.\n#\n# Another paragraph.\nname: x\n"
    )
    assert summary_of(path) == "One cell, e.g. `run a=b`"
    path.write_text("# Unset keys take their defaults from TaskSpec.\nqa: true\n")
    assert summary_of(path) == ""
    path.write_text("# " + "word " * 40 + "\nname: x\n")
    assert summary_of(path).endswith("...") and len(summary_of(path)) <= 96


def test_run_help_is_one_line_per_preset(capsys):
    from chronobench.commands.run import main

    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    presets = config_options("experiment")
    lines = [ln for ln in out.splitlines() if ln.split()[:1] and ln.split()[0] in presets]
    assert sorted(ln.split()[0] for ln in lines) == sorted(presets)
    assert "--hydra-help" in out and len(out.splitlines()) < 30


@pytest.mark.parametrize(
    ("override", "suggestion"),
    [("system=chronmem", "system=chronomem"), ("experiment=smoek", "experiment=smoke")],
)
def test_a_misspelt_option_names_the_closest(override, suggestion):
    from hydra import initialize_config_dir

    from chronobench.errors import ConfigError
    from chronobench.paths import config_dir
    from chronobench.runner.experiment import compose

    args = [override] if override.startswith("experiment=") else ["experiment=single", override]
    with (
        initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"),
        pytest.raises(ConfigError) as err,
    ):
        compose(args)
    text = str(err.value)
    assert f"did you mean {suggestion}?" in text
    assert "python -m chronobench list" in text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_served_backbone_without_its_server_stops_before_any_run_folder(tmp_path):
    pytest.importorskip("httpx")
    from chronobench.commands.run import main
    from chronobench.errors import ConfigError

    url = f"http://127.0.0.1:{_free_port()}/v1"
    args = ["experiment=single", "dataset=tiny", "task=generation", "backbone=openai",
            f"backbone.params.base_url={url}", f"paths.results_dir={tmp_path}/results",
            f"paths.data_dir={tmp_path}/data", f"paths.cache_dir={tmp_path}/cache"]  # fmt: skip
    t0 = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        main(args)
    assert time.perf_counter() - t0 < 30
    assert url in str(err.value) and "start the server" in str(err.value)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "results").exists()


def test_the_view_hint_names_the_results_folder_unless_it_is_the_default(tmp_path, monkeypatch):
    from chronobench.commands.run import view_hint

    monkeypatch.delenv("CHRONOBENCH_RESULTS", raising=False)
    hint = view_hint(tmp_path)
    assert f"python -m chronobench view --results {tmp_path}" in hint
    assert str(tmp_path / "site" / "index.html") in hint
    monkeypatch.setenv("CHRONOBENCH_RESULTS", str(tmp_path))
    assert "--results" not in view_hint(tmp_path)


def _a_published_generation_run() -> tuple[str, str]:
    """The main job's ChronoMem cell: its run id and a query with scored questions."""
    import gzip

    for folder in sorted(PUBLISHED.glob("locomo-session__chronomem__*")):
        path = folder / "queries.jsonl.gz"
        manifest = json.loads((folder / "manifest.json").read_text())
        if not path.is_file() or manifest["cell"]["task"]["kind"] != "benchmark":
            continue
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for raw in fh:
                line = json.loads(raw)
                if line.get("probes"):
                    return folder.name, line["query_id"]
    pytest.skip("no published generation run with a per-query file")


def test_show_json_and_the_known_only_label(capsys):
    from chronobench.commands.show import main

    run, query = _a_published_generation_run()
    results = ["--results", str(REPO_ROOT / "results")]
    assert main([run, query, *results]) == 0
    assert "on known questions only: " in capsys.readouterr().out
    assert main([run, query, "--json", *results]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["query_id"] == query and data["run_id"] == run
    assert {"version", "session", "summary"} <= set(data["gold"])
    assert set(data["scores_on_known_questions"]) <= {"rc_qa", "keep", "forget"}
    assert all({"question", "answer", "gold", "score", "label"} <= set(p) for p in data["probes"])


def test_a_closed_pipe_ends_a_command_quietly():
    # The reading end is closed before anything is written: every write fails.
    code = (
        "import os, sys\n"
        "r, w = os.pipe(); os.close(r); os.dup2(w, 1)\n"
        "from chronobench.commands import main\n"
        "sys.exit(main(['list']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_the_cells_eta_leaves_the_first_out_and_waits_for_three_more(monkeypatch):
    from chronobench.runner import progress

    clock = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    run = progress.Cells(10, draw=False)
    for now in (300.0, 320.0, 321.0):  # a slow first cell, then one more slow one
        clock[0] = now
        run.finish()
        assert run.eta_text().endswith("ETA ?"), run.eta_text()
    clock[0] = 322.0
    run.finish()  # gaps after the first: 20, 1, 1 s; their median, 1 s, per cell left
    assert run.eta_text() == "6 cells left, ETA 6s", run.eta_text()


def test_suite_override_is_exactly_one_cell():
    from hydra import initialize_config_dir

    from chronobench.commands.verify import suite_override
    from chronobench.paths import config_dir
    from chronobench.runner.experiment import compose, expand_suite

    cell = ["dataset=locomo_session", "task=generation", "system=chronomem"]
    args = ["experiment=default", suite_override(cell)]
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg, _ = compose(args)
        cells = expand_suite(cfg, args)
        plain, _ = compose(["experiment=single", *cell])
    assert len(cells) == 1
    assert cells[0][0]["system"] == plain["system"] and cells[0][0]["task"] == plain["task"]


@pytest.mark.slow  # composes and resolves the main job's cells (about 20 s)
def test_verify_cell_finds_the_published_cell_by_its_spec():
    from chronobench.commands.verify import _presets, find_cell
    from chronobench.paths import config_dir

    run, _ = _a_published_generation_run()
    run_id, preset, cell = find_cell(run[-10:], REPO_ROOT / "results", _presets([config_dir()]))
    assert run_id == run
    assert preset == "default" and "system=chronomem" in cell


def test_verify_cell_of_an_unknown_run_is_a_clear_error(tmp_path):
    from chronobench.commands.verify import find_cell
    from chronobench.errors import ResultsError

    (tmp_path / "published").mkdir()
    with pytest.raises(ResultsError, match="give its full run id"):
        find_cell("nope", tmp_path, ["default"])


def test_the_shipped_files_name_the_new_pages():
    readme = (REPO_ROOT / "README.md").read_text()
    for needle in ("python -m chronobench list", "experiment=smoke", "python -m chronobench view"):
        assert needle in readme
    assert Path(REPO_ROOT / "docs" / "commands.md").is_file()


def test_the_crossings_script_counts_modules_from_any_folder(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    script = REPO_ROOT / "scripts" / "nl_rollback_crossings.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120, check=True)  # fmt: skip
    modules = int(proc.stdout.split("modules=", 1)[1].split()[0])
    assert modules > 0, proc.stdout
