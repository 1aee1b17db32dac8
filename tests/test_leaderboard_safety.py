"""The leaderboard cannot be overwritten by the wrong runs: keyed by full spec, fixture
runs never published, provenance on every row, never shrunk without --force, and the
committed file matches the runs it names."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chronobench.errors import LeaderboardShrinkError
from chronobench.leaderboard.build import PUBLISHED_DIR, write_leaderboard
from tests.conftest import REPO_ROOT


@pytest.fixture
def make_run(tiny_run, copy_run):
    """``make_run(results, overrides, published=True)``: a finished run folder under
    ``results/runs``, run by the runner on the tiny fixture (hash embedder: the tables,
    not the scores, are under test), and marked publishable (as the main job's and the
    presets' runs are) unless ``published=False``."""

    def make(results: Path, overrides: list[str], *, published: bool = True) -> Path:
        extra = ["embedder.model=hash", *overrides]
        if published:
            extra += ["dataset.fixture=false", "publish=true"]
        return copy_run(tiny_run(*extra), results)

    return make


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def test_fixture_runs_are_never_published(tmp_path, make_run):
    make_run(tmp_path, ["task=selection"], published=False)
    with pytest.raises(LeaderboardShrinkError, match="nothing was written"):
        write_leaderboard(tmp_path)
    assert not (tmp_path / "LEADERBOARD.md").exists()


def test_ad_hoc_runs_are_never_published(tmp_path, make_run):
    # Real data, but made outside the main job and the named presets (publish unset):
    # running `leaderboard` afterwards must not put it on the board.
    folder = make_run(tmp_path, ["task=selection", "dataset.fixture=false"], published=False)
    assert _manifest(folder)["published"] is False
    with pytest.raises(LeaderboardShrinkError, match="nothing was written"):
        write_leaderboard(tmp_path)


def test_export_runs_are_never_published():
    from chronobench.runner.cell import publishable
    from chronobench.spec import RunSpec

    def spec(backbone: str) -> RunSpec:
        return RunSpec.model_validate(
            {
                "dataset": {"name": "locomo", "source": "x.json", "granularity": "session"},
                "system": {"name": "chronomem"},
                "backbone": {"name": backbone, "model": "m"},
                "task": {"kind": "benchmark"},
                "publish": True,
            }
        )

    assert publishable(spec("extractive"))
    assert not publishable(spec("export"))


def test_every_row_names_its_run_and_samples_sha(tmp_path, make_run):
    sel = make_run(tmp_path, ["task=selection"])
    gen = make_run(tmp_path, ["task=generation", "system=rag_only"])
    md = write_leaderboard(tmp_path).read_text()
    csv = (tmp_path / "LEADERBOARD.csv").read_text().splitlines()
    for folder in (sel, gen):
        sha = _manifest(folder)["samples"]["sha256"]
        assert f"| `{folder.name}` | `{sha}` |" in md
        assert any(folder.name in line and sha in line for line in csv[1:])
    assert csv[0].endswith("run_ids,samples_sha256")
    assert all(line.split(",")[-1] for line in csv[1:])  # no row without a samples sha
    # The run's small files are kept under published/ (committed), samples are not.
    for folder in (sel, gen):
        pub = tmp_path / PUBLISHED_DIR / folder.name
        assert (pub / "manifest.json").is_file() and not (pub / "samples.jsonl").exists()


def test_specs_that_differ_beyond_system_never_share_a_table(tmp_path, make_run):
    make_run(tmp_path, ["task=selection"])
    make_run(tmp_path, ["task=selection", "reranker=none"])
    make_run(tmp_path, ["task=generation", "system=chronomem"])
    make_run(tmp_path, ["task=generation", "system=rag_only"])
    md = write_leaderboard(tmp_path).read_text()
    sections = [line for line in md.splitlines() if line.startswith("## locomo")]
    assert len(sections) == 2, sections
    assert any("reranker.name=" in s for s in sections)
    # ChronoMem and RAG-only (same spec otherwise) share one table.
    assert md.count("### RQ2: rollback-consistent QA") == 1


def test_rebuild_never_shrinks_without_force(tmp_path, make_run):
    a = make_run(tmp_path, ["task=selection"])
    make_run(tmp_path, ["task=generation", "system=rag_only"])
    md_path = write_leaderboard(tmp_path)
    first = (md_path.read_bytes(), (tmp_path / "LEADERBOARD.csv").read_bytes())
    # A fresh clone: no local runs, the committed published/ files rebuild it exactly.
    shutil.rmtree(tmp_path / "runs")
    write_leaderboard(tmp_path)
    assert (md_path.read_bytes(), (tmp_path / "LEADERBOARD.csv").read_bytes()) == first
    # Published files gone too: refusing beats deleting committed work.
    shutil.rmtree(tmp_path / PUBLISHED_DIR)
    with pytest.raises(LeaderboardShrinkError):
        write_leaderboard(tmp_path)
    assert md_path.read_bytes() == first[0]
    # --force: exactly the local runs (here one), published/ pruned to match.
    make_run(tmp_path, ["task=selection"])
    write_leaderboard(tmp_path, force=True)
    assert {p.name for p in (tmp_path / PUBLISHED_DIR).iterdir()} == {a.name}


def test_leaderboard_command_on_a_fresh_clone_keeps_the_committed_file(tmp_path):
    (tmp_path / "LEADERBOARD.md").write_text("# committed\n`x__selection__abcdef0123`\n")
    proc = subprocess.run(
        [sys.executable, "-m", "chronobench", "leaderboard", "--results", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "nothing was written" in proc.stderr.lower()
    assert len(proc.stderr.strip().splitlines()) <= 2
    assert (tmp_path / "LEADERBOARD.md").read_text().startswith("# committed")


def test_leaderboard_command_reads_the_results_folder_the_run_writes(tmp_path, monkeypatch):
    # `run` writes to $CHRONOBENCH_RESULTS; `leaderboard` with no --results reads it too.
    from chronobench.commands.leaderboard import main

    env_dir, flag_dir = tmp_path / "from-env", tmp_path / "from-flag"
    for folder in (env_dir, flag_dir):
        folder.mkdir()
        (folder / "LEADERBOARD.md").write_text("# committed\n`x__selection__abcdef0123`\n")
    monkeypatch.chdir(tmp_path)  # no ./results here: the default must not be used
    monkeypatch.setenv("CHRONOBENCH_RESULTS", str(env_dir))
    with pytest.raises(LeaderboardShrinkError, match=re.escape(str(env_dir))):
        main([])
    with pytest.raises(LeaderboardShrinkError, match=re.escape(str(flag_dir))):
        main(["--results", str(flag_dir)])  # the flag wins over the variable
    monkeypatch.delenv("CHRONOBENCH_RESULTS")
    with pytest.raises(LeaderboardShrinkError, match=re.escape(str(tmp_path / "results"))):
        main([])


def test_committed_leaderboard_matches_the_runs_it_names(tmp_path):
    """results/LEADERBOARD.md and .csv are exactly what results/published/ rebuilds."""
    from chronobench.results.schema import load_run
    from chronobench.spec import PROTOCOL_VERSION

    results = REPO_ROOT / "results"
    published = results / PUBLISHED_DIR
    assert published.is_dir() and any(published.iterdir()), (
        "results/published/ is empty: run the main job (`python -m chronobench run`), which "
        "rebuilds results/LEADERBOARD.* and results/published/, and commit all three"
    )
    stale = [
        p.name for p in published.iterdir() if load_run(p).manifest.protocol != PROTOCOL_VERSION
    ]
    if stale and len(stale) == len(list(published.iterdir())):
        pytest.skip(
            f"results/published/ holds only runs of an older system protocol ({len(stale)}); "
            "the main job regenerates the board under protocol "
            f"{PROTOCOL_VERSION} and archives them (results/archive/, ARCHIVE.md)"
        )
    shutil.copytree(published, tmp_path / PUBLISHED_DIR)
    if (results / "audit").is_dir():  # the board shows each headline's audit
        shutil.copytree(results / "audit", tmp_path / "audit")
    md = write_leaderboard(tmp_path)
    assert md.read_text() == (results / "LEADERBOARD.md").read_text()
    assert (tmp_path / "LEADERBOARD.csv").read_text() == (results / "LEADERBOARD.csv").read_text()
    named = set(
        line.split("`")[1]
        for line in md.read_text().splitlines()
        if line.startswith("| `") and "__" in line
    )
    assert named == {p.name for p in published.iterdir()}


def test_other_task_kinds_render_their_own_section(tmp_path, make_run, monkeypatch):
    from chronobench.leaderboard import build

    calls = []

    def section(records):
        calls.append([r.run_id for r in records])
        return "## Other track\n\nrows\n", {r.run_id for r in records}

    folder = make_run(tmp_path, ["task=selection"])
    man = json.loads((folder / "manifest.json").read_text())
    man["spec"]["task"]["kind"] = "other_kind"
    (folder / "manifest.json").write_text(json.dumps(man))
    from chronobench.runner.task_kind import TaskKind

    registered = build.registered_tracks()
    other = TaskKind(run=section, board=section)
    monkeypatch.setattr(build, "registered_tracks", lambda: {**registered, "other_kind": other})
    md = write_leaderboard(tmp_path).read_text()
    assert calls == [[folder.name]]
    assert "## Other track" in md and f"`{folder.name}`" in md
    assert (tmp_path / PUBLISHED_DIR / folder.name / "manifest.json").is_file()


def test_a_run_publishes_its_own_cells_not_stray_local_runs(tmp_path, make_run):
    from chronobench.leaderboard.build import publish_after_run

    mine = make_run(tmp_path, ["task=selection"])
    stray = make_run(tmp_path, ["task=selection", "reranker=none"])
    md = publish_after_run(tmp_path, {mine.name})
    assert md is not None
    assert mine.name in md.read_text() and stray.name not in md.read_text()
    # The leaderboard command takes every local run.
    assert stray.name in write_leaderboard(tmp_path).read_text()


def test_rq1_headline_is_the_hand_written_held_out_set():
    """Issue 15: the hand-written held-out set heads the board; templates are labelled."""
    from chronobench.leaderboard.tables import render_markdown
    from chronobench.results.metrics_file import Breakdown

    def slot(mean):
        stat = {"mean": mean, "ci_low": mean - 0.1, "ci_high": mean + 0.1, "n": 9}
        groups = Breakdown.model_validate({"all": {"recall_at_1": stat}})
        return {"selection": {"chronomem": (groups, "r")}, "systems": {}}

    md = render_markdown(
        {
            ("locomo", "session", "built"): slot(0.9),
            ("locomo", "session", "locomo_v3_heldout"): slot(0.5),
            ("locomo", "turn", "locomo_v3_heldout"): slot(0.25),
        }
    )
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads[0] == "## RQ1 headline: hand-written held-out requests (`locomo_v3_heldout`)"
    assert "| ChronoMem (hybrid + rules + reranker) | 50.0 [40.0, 60.0] (n=9) | 25.0" in md
    assert "## locomo (session granularity, template requests: a test of request reading)" in heads
    assert render_markdown({("locomo", "session", "built"): slot(0.9)}).count("headline") == 0


def _as_protocol_1(folder: Path, dest_root: Path) -> Path:
    """A copy of ``folder`` as a published run of protocol 1 (its manifest predates the
    protocol field), under another run id."""
    old_id = folder.name[:-10] + "0123456789"
    dest = dest_root / PUBLISHED_DIR / old_id
    dest.mkdir(parents=True)
    for name in ("manifest.json", "metrics.json", "config.yaml"):
        data = (folder / name).read_text()
        if name.endswith(".json"):
            obj = json.loads(data)
            obj["run_id"] = old_id
            obj.pop("protocol", None)
            data = json.dumps(obj)
        (dest / name).write_text(data)
    return dest


def test_old_protocol_runs_move_to_the_archive_and_never_mix_with_new_rows(tmp_path, make_run):
    from chronobench.leaderboard.build import ARCHIVE_DIR, ARCHIVE_FILE, archived_runs
    from chronobench.results.schema import load_run
    from chronobench.spec import PROTOCOL_VERSION

    new = make_run(tmp_path, ["task=generation", "system=rag_only"])
    assert _manifest(new)["protocol"] == PROTOCOL_VERSION == 3
    old = _as_protocol_1(new, tmp_path)
    assert load_run(old).manifest.protocol == 1  # still readable (score reads it)
    # A board from before the bump names the old run: archiving it is not shrinking.
    (tmp_path / "LEADERBOARD.md").write_text(f"# old board\n| `{old.name}` | `x` |\n")
    md = write_leaderboard(tmp_path).read_text()
    assert new.name in md and old.name not in md
    assert "system protocol 3" in md and "ARCHIVE.md" in md
    archived = tmp_path / ARCHIVE_DIR / "protocol-1" / old.name
    assert (archived / "manifest.json").is_file() and not old.exists()
    archive_md = (tmp_path / ARCHIVE_FILE).read_text()
    assert old.name in archive_md and new.name not in archive_md
    assert "protocol 1" in archive_md.splitlines()[0]
    assert [r.run_id for r in archived_runs(tmp_path)] == [old.name]
    # Rebuilding changes nothing (the archive is kept, the board stays as it is).
    before = (md, archive_md)
    write_leaderboard(tmp_path)
    assert (
        (tmp_path / "LEADERBOARD.md").read_text(),
        (tmp_path / ARCHIVE_FILE).read_text(),
    ) == before


def test_runs_embedded_on_a_cpu_dependent_runtime_stay_off_the_board(tmp_path, make_run, capsys):
    """Issue 28: int8 onnxruntime and float32 torch vectors follow the CPU's kernels, so a
    run made with them is not a published figure; dropping one is not a shrink."""
    kept = make_run(tmp_path, ["task=selection"])
    gone = make_run(tmp_path, ["task=generation", "system=rag_only"])
    write_leaderboard(tmp_path)
    for name in ("manifest.json", "config.yaml"):
        for folder in (gone, tmp_path / PUBLISHED_DIR / gone.name):
            path = folder / name
            text = path.read_text().replace('"model": "hash"', '"model": "minilm"')
            text = text.replace("model: hash", "model: minilm")
            path.write_text(text.replace("torch_f64", "onnx_int8"))
    capsys.readouterr()
    md = write_leaderboard(tmp_path).read_text()
    assert "1 run(s) embedded on a CPU-dependent runtime" in capsys.readouterr().out
    assert kept.name in md and gone.name not in md
    assert {p.name for p in (tmp_path / PUBLISHED_DIR).iterdir()} == {kept.name}
