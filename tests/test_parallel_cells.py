"""Cells in worker processes (``jobs``): what runs where never changes what is written.

The byte-for-byte check of a whole suite run with ``jobs=2`` against the sequential
smoke run is in ``tests/test_runner_e2e.py``; here: the setting, the warm groups of the
main job, and a failing cell in a worker.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from chronobench.errors import ConfigError
from chronobench.runner.parallel import (
    chain_group,
    local_models,
    resolve_jobs,
    run_parallel,
    warm_group,
)


def _cells(compose_cells, overrides):
    from chronobench.runner.components import resolve_cell
    from chronobench.spec import spec_from_config

    return [
        resolve_cell(spec_from_config(cfg, choices=ch), choices=ch)
        for cfg, ch in compose_cells(overrides)
    ]


def _smoke_cells_failing_at(compose_cells, tmp_path, bad):
    """The smoke preset's first three cells writing under ``tmp_path``, cell ``bad``
    with its results folder where a file already is (it fails when it writes)."""
    overrides = ["experiment=smoke", "progress=false", "leaderboard=false"]
    paths = {
        "results_dir": str(tmp_path / "results"),
        "data_dir": str(tmp_path / "data"),
        "cache_dir": str(tmp_path / "cache"),
    }
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the runs folder should be")
    cells = []
    for n, c in enumerate(_cells(compose_cells, overrides)[:3]):
        own = {**paths, "results_dir": str(blocked)} if n == bad else paths
        cells.append(
            dataclasses.replace(
                c, spec=c.spec.model_copy(update={"paths": type(c.spec.paths)(**own)})
            )
        )
    return cells


def test_jobs_is_a_number_of_processes_or_auto():
    assert resolve_jobs(1, 10) == 1
    assert resolve_jobs(3, 10) == 3
    assert resolve_jobs(8, 2) == 2  # never more workers than cells
    assert 1 <= resolve_jobs("auto", 100) <= 4  # one per CPU, at most AUTO_MAX_JOBS
    for bad in (0, -1, "two", True, 1.5):
        with pytest.raises(ConfigError, match="config key 'jobs'"):
            resolve_jobs(bad, 4)


def test_a_bad_jobs_value_is_rejected_before_any_cell(compose_cells):
    from chronobench.spec import spec_from_config

    ((cfg, choices),) = compose_cells(["experiment=single", "dataset=tiny"])
    assert spec_from_config({**cfg, "jobs": 2}, choices=choices).jobs == 2
    assert spec_from_config({**cfg, "jobs": "auto"}, choices=choices).jobs == "auto"
    for bad in (0, "many"):
        with pytest.raises(ConfigError, match="jobs"):
            spec_from_config({**cfg, "jobs": bad}, choices=choices)


def test_jobs_is_not_part_of_the_run_identity(compose_cells):
    from chronobench.spec import spec_from_config, spec_sha256

    ((cfg, choices),) = compose_cells(["experiment=single", "dataset=tiny"])
    one = spec_from_config({**cfg, "jobs": 1}, choices=choices)
    many = spec_from_config({**cfg, "jobs": 4}, choices=choices)
    assert spec_sha256(one) == spec_sha256(many)
    assert "jobs" not in one.recorded()


def test_the_main_job_runs_on_every_cpu_and_warms_each_granularity_first(compose_cells):
    """Session cells wait for the first session cell, turn cells for the first turn cell:
    the two leaders index different descriptors, so they can run side by side."""
    from chronobench.runner.experiment import compose
    from tests.conftest import hydra_context

    with hydra_context():
        cfg, _ = compose(["experiment=default"])
    assert cfg["jobs"] == "auto"
    cells = _cells(compose_cells, ["experiment=default"])
    groups = [warm_group(c) for c in cells]
    grans = [c.spec.dataset.granularity for c in cells]
    assert groups[0] != groups[1] and {grans[0], grans[1]} == {"session", "turn"}
    for g, gran in zip(groups, grans, strict=True):
        assert g == groups[grans.index(gran)]  # one group per granularity


def test_the_main_jobs_restoring_readers_run_as_one_chain(compose_cells):
    """ChronoMem, the oracle and every system that restores and reads as ChronoMem does
    run one after another in one worker (they share one prompt memo), at ChronoMem's
    place in the suite; every other cell, and each warm group's first cell, alone."""
    from chronobench.runner.parallel import _units

    cells = _cells(compose_cells, ["experiment=default"])
    groups = [warm_group(c) for c in cells]
    leaders = {groups.index(g) for g in groups}
    units = _units(cells, leaders)
    assert sorted(i for u in units for i in u) == list(range(len(cells)))
    chains = [u for u in units if len(u) > 1]
    assert len(chains) == 1
    names = [cells[i].spec.system.name for i in chains[0]]
    assert names[:2] == ["chronomem", "chronomem_oracle"]
    assert {"floor_restore_random", "floor_restore_v1", "floor_session_parity"} <= set(names)
    assert {"rag_only", "full_history", "floor_always_no"}.isdisjoint(names)
    assert all(chain_group(c) is None for c in cells if not c.spec.task.generates)
    assert [u[0] for u in units] == sorted(u[0] for u in units)  # suite order


def test_a_failing_cell_stops_new_cells_and_raises_in_the_parent(compose_cells, tmp_path):
    """A worker's error reaches the caller with its type; the cell already running
    finishes and writes its folder."""
    cells = _smoke_cells_failing_at(compose_cells, tmp_path, 1)
    with pytest.raises((FileExistsError, NotADirectoryError)):
        run_parallel(cells, 2)
    written = list((tmp_path / "results" / "runs").iterdir())
    assert [p.name for p in written] and all(Path(p, "metrics.json").is_file() for p in written)


def test_a_chain_that_fails_prints_the_cells_it_finished(compose_cells, tmp_path, capsys):
    """ChronoMem and the oracle run as one chain in one worker; when the oracle fails,
    ChronoMem's folder is written and its tables and its "wrote" line are printed before
    the error reaches the caller."""
    cells = _smoke_cells_failing_at(compose_cells, tmp_path, 2)
    assert [c.spec.system.name for c in cells[1:]] == ["chronomem", "chronomem_oracle"]
    with pytest.raises((FileExistsError, NotADirectoryError)):
        run_parallel(cells, 2)
    printed = capsys.readouterr().out
    assert "[2/3] wrote " in printed  # ChronoMem, finished before the oracle failed
    assert "[3/3] wrote " not in printed
    chronomem = [p for p in (tmp_path / "results" / "runs").iterdir() if "chronomem" in p.name]
    assert len(chronomem) == 1 and Path(chronomem[0], "metrics.json").is_file()


def test_a_worker_error_that_cannot_carry_the_output_prints_it_there(capsys):
    """An error whose attributes do not pickle reaches the parent without them: the
    worker prints the output itself rather than lose it."""
    from chronobench.runner import parallel

    class Unpicklable(Exception):
        def __reduce__(self):
            raise TypeError("not picklable")

    err = Unpicklable("boom")
    parallel._hand_over(err, parallel.FINISHED, [("f", "ChronoMem's table\n", {})])
    assert not hasattr(err, parallel.FINISHED)
    assert capsys.readouterr().out == "ChronoMem's table\n"
    fine = ValueError("boom")
    parallel._hand_over(fine, parallel.PRINTED, "partial table\n")
    assert capsys.readouterr().out == ""
    import pickle

    assert getattr(pickle.loads(pickle.dumps(fine)), parallel.PRINTED) == "partial table\n"


def test_auto_runs_local_model_cells_one_at_a_time(compose_cells):
    """Two workers would each load a vLLM or transformers model on one GPU: the runner
    falls back to one cell at a time for jobs=auto (an explicit jobs=N still runs N)."""
    cells = _cells(compose_cells, ["experiment=smoke"])
    assert local_models(cells) == []  # the extractive backbone loads nothing
    gen = next(c for c in cells if c.spec.task.generates)
    sel = next(c for c in cells if not c.spec.task.generates)
    for name in ("vllm", "transformers"):
        backbone = gen.spec.backbone.model_copy(update={"name": name})
        local = dataclasses.replace(gen, spec=gen.spec.model_copy(update={"backbone": backbone}))
        assert local_models([sel, local]) == [name]
        unused = dataclasses.replace(sel, spec=sel.spec.model_copy(update={"backbone": backbone}))
        assert local_models([unused]) == []  # selection builds no backbone


def test_a_missing_int8_export_is_made_beside_the_builds(compose_cells, tmp_path):
    """Cells on the int8 MiniLM share one export: listed once while its cache folder has
    no exported model, not at all once it has one (or for a torch or hash embedder)."""
    from chronobench.runner.parallel import _missing_exports
    from chronomem.onnx_embedder import OnnxEmbedder

    cache = tmp_path / "cache"
    int8 = ["experiment=default", f"paths.cache_dir={cache}", "embedder.runtime=onnx_int8"]
    cells = _cells(compose_cells, int8)
    assert _missing_exports(_cells(compose_cells, ["experiment=default"])) == []  # torch_f64
    missing = _missing_exports(cells)
    assert missing == [(cells[0].spec.embedder.model_dump(), str(cache))]
    assert missing[0][0]["runtime"] == "onnx_int8"
    target = OnnxEmbedder("minilm", cache_dir=cache).export_path()
    target.parent.mkdir(parents=True)
    target.write_bytes(b"exported")
    assert _missing_exports(cells) == []
    torch_cells = _cells(compose_cells, ["experiment=smoke", "embedder.runtime=torch"])
    assert _missing_exports(torch_cells) == []
