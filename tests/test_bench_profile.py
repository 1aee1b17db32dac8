"""``bench main``: exclusive stage accounting, patching that restores, a real tiny run."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from chronobench.bench import profile
from chronobench.bench.profile import STAGES, StageClock, format_table, instrumented


class FakeTime:
    """A perf_counter that only moves when told to."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_nested_stages_are_exclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTime()
    monkeypatch.setattr(profile.time, "perf_counter", fake)
    clock = StageClock()

    def embed() -> None:
        fake.now += 2.0

    def resolve() -> None:
        fake.now += 1.0
        t_embed()
        fake.now += 0.5

    t_embed, t_resolve = clock.wrap("embed", embed), clock.wrap("resolve", resolve)
    t_resolve()  # outside a cell: not charged anywhere
    clock.start_cell("cell A")
    t_resolve()
    fake.now += 0.25  # un-instrumented work
    row = clock.end_cell()
    assert row["resolve"] == 1.5 and row["embed"] == 2.0
    assert row["other"] == 0.25 and row["total"] == 3.75
    assert sum(row[s] for s in STAGES) + row["other"] == row["total"]
    table = format_table([row])
    assert "cell A" in table and "share %" in table


def test_instrumented_restores_everything() -> None:
    from chronomem import ChronoMem
    from chronomem.embedders import HashEmbedder

    before_encode = HashEmbedder.__dict__["encode"]
    own_before = set(ChronoMem.__dict__)
    with instrumented(StageClock()) as missing:
        assert HashEmbedder.encode is not before_encode
        assert "chronomem:ChronoMem.resolve" not in missing
    assert HashEmbedder.__dict__["encode"] is before_encode
    assert set(ChronoMem.__dict__) == own_before  # shadows of inherited methods removed


@pytest.mark.slow
def test_bench_main_on_the_tiny_fixture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHRONOBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("CHRONOBENCH_RESULTS", str(tmp_path / "results-untouched"))
    parser = argparse.ArgumentParser()
    profile.add_arguments(parser)
    args = parser.parse_args(
        [
            "--experiment",
            "single",
            "dataset=tiny",
            "task=all",
            "system=rag_only",
            "--keep",
            str(tmp_path / "k"),
            "--before",
        ]
    )
    assert args.before == []  # --before with no override: the experiment alone, in-process
    assert profile.main(args) == 0
    assert any((tmp_path / "k" / "after" / "runs").iterdir())  # the one side, kept
    out = capsys.readouterr().out
    table = out[out.index("bench main:") :]
    assert "system=rag_only" in table and "all cells" in table
    row = next(line for line in table.splitlines() if line.startswith("locomo-session"))
    cols = [float(x) for x in row.split()[-10:]]
    assert len(cols) == len(STAGES) + 3 and cols[-2] > 0 and cols[-1] > 0
    assert cols[STAGES.index("embed")] > 0  # MiniLM really ran (cold caches)
    assert not (tmp_path / "results-untouched").exists()  # results went to a temp folder
    from chronomem.embedders import shared_caches

    # no process cache outlives the temp folder it wrote to (a later test would write there)
    assert not shared_caches()
    with pytest.raises(SystemExit, match="not empty"):
        profile.main(args)  # the kept runs would resume


@pytest.mark.slow
def test_bench_main_before_and_after_in_fresh_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHRONOBENCH_RESULTS", str(tmp_path / "results-untouched"))
    parser = argparse.ArgumentParser()
    profile.add_arguments(parser)
    args = parser.parse_args(
        ["--experiment", "single", "dataset=tiny", "task=selection", "--keep", str(tmp_path / "k")]
    )
    assert args.before == list(profile.DEFAULT_BEFORE)  # int8 vs the configured runtime
    assert profile.main(args) == 0
    out = capsys.readouterr().out
    assert "embedder.runtime=onnx_int8" in out and "load at start" in out
    table = out[out.index("stage ") :].splitlines()
    embed = next(line for line in table if line.startswith("embed "))
    assert len(embed.split()) == 4  # stage, before, after, ratio
    assert "same selected version:" in out and "chronomem " in out
    for side in ("before", "after"):
        assert any((tmp_path / "k" / side / "runs").iterdir())
    assert not (tmp_path / "results-untouched").exists()
    with pytest.raises(SystemExit, match="not empty"):
        profile.main(args)  # kept runs would resume: a second timing would be warm


def test_agreement_matches_cells_by_name_and_lists_changed_requests(tmp_path: Path) -> None:
    import json

    from chronobench.bench.compare import agreement

    def write(side: str, digest: str, tops: list[int]) -> None:
        run = tmp_path / side / "runs" / f"locomo-session__selection__selection__{digest}"
        run.mkdir(parents=True)
        rows = [
            {"sample_id": f"sel/{sel}/q{i}", "kind": "selection", "selector": sel,
             "gold_version": 3, "ranked": [[top, 1.0], [9, 0.5]]}
            for i, top in enumerate(tops) for sel in ("bm25", "chronomem")
        ]  # fmt: skip
        (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    write("before", "aaaaaaaaaa", [3, 3, 4])
    write("after", "bbbbbbbbbb", [3, 5, 4])
    lines = agreement(tmp_path / "before", tmp_path / "after")
    assert lines[0].endswith("bm25 2/3, chronomem 2/3")
    assert lines[1].strip() == "sel/chronomem/q1: gold 3, before 3, after 5"
