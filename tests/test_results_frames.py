"""The results as data frames agree with the published board and the per-query files."""

from __future__ import annotations

import pytest

from tests.conftest import REPO_ROOT

RESULTS = REPO_ROOT / "results"


def _main_job_chronomem() -> str:
    import json

    for folder in sorted((RESULTS / "published").glob("locomo-session__chronomem__*")):
        manifest = json.loads((folder / "manifest.json").read_text())
        if (
            manifest["cell"]["task"]["kind"] == "benchmark"
            and manifest["dataset"]["n_streams"] == 10
        ):
            return folder.name
    pytest.skip("no published main-job ChronoMem run")


def test_runs_df_holds_the_boards_figure_with_its_interval():
    from chronobench.results.frames import runs_df

    run = _main_job_chronomem()
    df = runs_df(RESULTS, run=run)
    assert set(df.run_id) == {run} and set(df["where"]) == {"published"}
    row = df[(df.section == "probes") & (df.group == "all") & (df.metric == "rc_qa")].iloc[0]
    shown = f"{100 * row['mean']:.1f} [{100 * row.ci_low:.1f}, {100 * row.ci_high:.1f}]"
    assert shown in (RESULTS / "LEADERBOARD.md").read_text()
    assert row.system == "chronomem" and row.n_streams == 10
    assert {"intent:undo", "intent:restore_to"} <= set(df.group)


def test_queries_df_has_a_row_per_scored_question():
    import gzip
    import json

    from chronobench.results.frames import queries_df, selections_df

    run = _main_job_chronomem()
    df = queries_df(RESULTS, run=run)
    with gzip.open(RESULTS / "published" / run / "queries.jsonl.gz", "rt") as fh:
        lines = [json.loads(x) for x in fh]
    scored = sum(len(x.get("probes") or []) for x in lines if x.get("kind", "query") == "query")
    assert len(df) == scored > 0
    assert df.question.notna().all() and df.gold.notna().all()
    assert set(df.outcome) <= {"exact", "early", "late", "none"}
    assert ((df.chosen_version == df.gold_version) == (df.outcome == "exact")).all()
    assert selections_df(RESULTS, run=run).empty  # a generation cell ranks nothing


def test_a_folder_with_no_runs_gives_empty_frames(tmp_path):
    from chronobench.results.frames import queries_df, runs_df

    assert runs_df(tmp_path).empty and "mean" in runs_df(tmp_path).columns
    assert queries_df(tmp_path).empty
