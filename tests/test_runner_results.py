"""The results schema: versioned, validated on read, and an old (schema 1.0) results
folder still loads and re-scores."""

from __future__ import annotations

import json
import shutil

import pytest

from chronobench.errors import ResultsError
from chronobench.results import RESULTS_SCHEMA_VERSION, load_run
from tests.conftest import REPO_ROOT

OLD = REPO_ROOT / "tests" / "fixtures" / "results_v1"


@pytest.fixture
def old_results(tmp_path):
    dest = tmp_path / "results"
    shutil.copytree(OLD, dest)
    return dest


def test_old_results_folder_loads_with_a_spec(old_results):
    runs = sorted((old_results / "runs").iterdir())
    assert len(runs) == 2
    for folder in runs:
        run = load_run(folder)
        assert run.manifest.schema_version == RESULTS_SCHEMA_VERSION  # migrated on read
        assert run.spec.dataset.fixture  # tiny fixture: never published
        assert not run.manifest.published
        assert run.manifest.samples.sha256  # computed from samples.jsonl
        assert "kind" not in run.spec.system.options  # 1.0's unread key dropped


def test_old_results_folder_rescores_into_the_current_schema(old_results):
    from chronobench.runner.scoring import rescore_run

    for folder in sorted((old_results / "runs").iterdir()):
        metrics = rescore_run(folder)
        assert metrics.selection or metrics.probes.all
        on_disk = json.loads((folder / "metrics.json").read_text())
        assert on_disk["schema_version"] == RESULTS_SCHEMA_VERSION
        again = load_run(folder)
        assert again.manifest.run_id == folder.name
        assert json.loads((folder / "manifest.json").read_text())["spec"]["dataset"]["fixture"]


def test_bad_results_files_name_the_file(old_results, tmp_path):
    folder = next((old_results / "runs").iterdir())
    (folder / "metrics.json").write_text('{"schema_version": "9.9"}')
    with pytest.raises(ResultsError, match=r"metrics\.json: results schema_version '9\.9'"):
        load_run(folder)
    (folder / "metrics.json").write_text("{not json")
    with pytest.raises(ResultsError, match=r"metrics\.json: not valid JSON"):
        load_run(folder)
    (folder / "metrics.json").write_text(
        json.dumps({"schema_version": "2.0", "run_id": folder.name, "k": 5, "metrics": {}})
    )
    man = folder / "manifest.json"
    data = json.loads(man.read_text())
    data["schema_version"] = "2.0"
    man.write_text(json.dumps(data))
    with pytest.raises(ResultsError, match=r"manifest\.json: field"):
        load_run(folder)
    with pytest.raises(ResultsError, match="no such run folder"):
        load_run(tmp_path / "nope")


def test_manifest_holds_the_whole_spec_and_samples_sha(tmp_path, compose_cells):
    from chronobench.results.io import SampleLog
    from chronobench.runner.cell import prepare_run_dir, write_results
    from chronobench.spec import run_id, spec_from_config, spec_sha256

    ((d, _),) = compose_cells(["experiment=single", "dataset=tiny"])
    d["paths"]["results_dir"] = str(tmp_path / "results")
    spec = spec_from_config(d)
    rid = run_id(spec, "data-sha")
    folder = prepare_run_dir(spec, rid)
    SampleLog(folder / "samples.jsonl").append([{"sample_id": "x", "kind": "probe"}])
    info = {"folder": "f", "manifest_sha256": "data-sha", "n_streams": 1, "n_queries": 1}
    write_results(folder, spec, rid, metrics={}, k=5, dataset=info, rows=[{}], timings={})
    run = load_run(folder)
    # The whole spec but its run-time fields (paths, flags), which no run file records.
    assert run.spec.recorded() == spec.recorded()
    assert run.manifest.spec_sha256 == spec_sha256(spec)
    assert run.manifest.samples.sha256 and len(run.manifest.samples.sha256) == 64
    assert str(folder).startswith(str(tmp_path))  # absolute, under the results dir


def test_runs_of_an_older_schema_are_never_published(old_results):
    import yaml

    from chronobench.leaderboard.build import collect_runs

    for folder in (old_results / "runs").iterdir():
        cfg = yaml.safe_load((folder / "config.yaml").read_text())
        cfg["dataset"]["source"] = None  # as if it had run on the real LoCoMo
        (folder / "config.yaml").write_text(yaml.safe_dump(cfg))
        assert load_run(folder).spec.published and load_run(folder).migrated
    runs = collect_runs(old_results)
    assert len(runs) == 2 and not any(r.published for r in runs)
    # Re-scoring rewrites the files in the current schema, still marked as migrated.
    from chronobench.runner.scoring import rescore_run

    for folder in (old_results / "runs").iterdir():
        rescore_run(folder)
    assert not any(r.published for r in collect_runs(old_results))


def test_an_ad_hoc_rerun_that_reproduces_a_published_run_keeps_it_published(
    tmp_path, compose_cells
):
    """An audit re-reads a main-job cell with ``publish=false``: the same samples are the
    same run and stay on the board; a rerun whose samples differ is a local run."""
    from chronobench.results.io import SampleLog
    from chronobench.runner.cell import prepare_run_dir, write_results
    from chronobench.spec import run_id, spec_from_config

    ((d, _),) = compose_cells(["experiment=single", "dataset=locomo_session", "task=selection"])
    d["paths"]["results_dir"] = str(tmp_path / "results")
    info = {"folder": "f", "manifest_sha256": "data-sha", "n_streams": 1, "n_queries": 1}

    def write(publish: bool, sample: str) -> bool:
        spec = spec_from_config({**d, "publish": publish})
        rid = run_id(spec, "data-sha")
        folder = prepare_run_dir(spec, rid)
        (folder / "samples.jsonl").unlink(missing_ok=True)
        SampleLog(folder / "samples.jsonl").append([{"sample_id": sample, "kind": "probe"}])
        write_results(folder, spec, rid, metrics={}, k=5, dataset=info, rows=[{}], timings={})
        return load_run(folder).manifest.published

    assert write(True, "x")
    assert write(False, "x")  # reproduced byte for byte: the same, published run
    assert not write(False, "y")  # different samples: a local run
    assert not write(False, "x")  # and it stays local until a publishing run remakes it
