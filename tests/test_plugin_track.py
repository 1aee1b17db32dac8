"""A track is one folder plus one entry point: the echo track (tests/plugin_track/),
installed as an entry point of the ``chronobench.tracks`` group, runs a cell through the
runner, gets its section on the leaderboard and its line in the viewer, with no edit to
chronobench."""

from __future__ import annotations

import json
from importlib.metadata import EntryPoint

import pytest

from chronobench import plugins
from chronobench.registry import Registry
from chronobench.runner import components


@pytest.fixture
def echo_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The task registry as a fresh process sees it with the echo track's package installed."""
    fresh = Registry("task", entry_points="chronobench.tracks")
    for e in components.TASKS.entries():  # the built-in tracks
        fresh.register(e.name, e.target, order=e.order)
    entry = EntryPoint("echo", "tests.plugin_track:TRACK", "chronobench.tracks")
    monkeypatch.setattr(
        plugins, "_entry_points", lambda group: [entry] if group == "chronobench.tracks" else []
    )
    monkeypatch.setattr(components, "TASKS", fresh)


def test_a_plug_in_track_runs_a_cell_and_shows_on_the_board_and_in_the_viewer(
    echo_installed, compose_cells, tiny_dirs, tmp_path
):
    from chronobench.leaderboard.build import write_leaderboard
    from chronobench.runner.cell import run_cell
    from chronobench.viewer.site import build_site

    assert "echo" in components.TASKS.names()
    ((cfg, _),) = compose_cells(
        [
            "experiment=single",
            "dataset=tiny",
            "progress=false",
            "leaderboard=false",
            "task=selection",
            "task.selection=false",
            "+task.kind=echo",
            "embedder.model=hash",
            "dataset.fixture=false",
            "publish=true",
        ]  # fmt: skip
    )
    cfg["paths"] = {
        "results_dir": str(tmp_path / "results"),
        "data_dir": str(tiny_dirs["data"]),
        "cache_dir": str(tiny_dirs["cache"]),
    }
    folder = run_cell(cfg)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["spec"]["task"]["kind"] == "echo" and manifest["published"]
    streams = json.loads((folder / "metrics.json").read_text())["metrics"]["track"]["streams"]
    assert streams > 0

    md = write_leaderboard(tmp_path / "results").read_text()
    assert "## Echo track" in md and f"| `{folder.name}` | {streams} |" in md

    build_site(tmp_path / "results", tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    assert "Echo track: streams" in index and folder.name in index
