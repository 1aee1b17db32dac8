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
    from chronobench.memory import ChronoMem
    from chronobench.memory.embedders import HashEmbedder

    before_encode = HashEmbedder.__dict__["encode"]
    own_before = set(ChronoMem.__dict__)
    with instrumented(StageClock()) as missing:
        assert HashEmbedder.encode is not before_encode
        assert "chronobench.memory:ChronoMem.resolve" not in missing
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
        ["--experiment", "single", "dataset=tiny", "task=all", "system=rag_only"]
    )
    assert profile.main(args) == 0
    out = capsys.readouterr().out
    table = out[out.index("bench main:") :]
    assert "system=rag_only" in table and "all cells" in table
    row = next(line for line in table.splitlines() if line.startswith("locomo-session"))
    cols = [float(x) for x in row.split()[-10:]]
    assert len(cols) == len(STAGES) + 3 and cols[-2] > 0 and cols[-1] > 0
    assert cols[STAGES.index("embed")] > 0  # MiniLM really ran (cold caches)
    assert not (tmp_path / "results-untouched").exists()  # results went to a temp folder
