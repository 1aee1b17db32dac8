"""RunSpec and registries: every config option validates, nothing unread slips through,
run ids cover what changes results, suites and overrides behave."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chronobench.errors import ConfigError
from chronobench.runner.components import resolve_cell
from chronobench.runner.experiment import expand_suite, with_default_experiment
from chronobench.spec import run_id, settle_resolver, spec_from_config
from tests.conftest import REPO_ROOT, config_options

GROUPS = ["dataset", "system", "backbone", "retriever", "reranker", "task"]
# Options that only make sense together (another task kind's dataset and task).
# The repair task's own check runs too: its system is a repair method.
_REPAIR_SYSTEM = ["~system", "+system.name=dgr"]
COMPANIONS = {
    ("dataset", "repair_controlled"): ["task=repair", *_REPAIR_SYSTEM],
    ("task", "repair"): ["dataset=repair_controlled", *_REPAIR_SYSTEM],
    # The memory-systems track names its system only (experiment/peers.yaml).
    ("task", "peers"): ["~system", "+system.name=chronomem"],
    # RQ4 (experiment/selective.yaml): LoCoMo turns, a row name only.
    ("task", "selective"): ["dataset=locomo_turn", "~system", "+system.name=chronomem_selective"],
}


def _check(cfg, choices):
    """Shape (spec_from_config), then components and their options (resolve_cell). The
    backbone's packages are checked last: an absent optional one (vllm) is fine here."""
    import contextlib

    from chronobench.errors import MissingDependencyError

    spec = spec_from_config(cfg, choices=choices)
    replayed = str(choices.get("backbone", "")).startswith("replay")
    if replayed and not Path(cfg["backbone"]["params"]["completions"]).is_file():
        # A replayed cell's id names its replies' content, so resolving one whose file does
        # not exist yet (the default export path, or experiment=llm_cpu_qwen60's, committed
        # once whole by scripts/publish_qwen60.sh) says the file is missing.
        with pytest.raises(FileNotFoundError, match="no completions file.*generate"):
            resolve_cell(spec, choices=choices)
        return spec
    with contextlib.suppress(MissingDependencyError):
        resolve_cell(spec, choices=choices)
    return spec


def _contains(spec_part, cfg_part, where: str) -> None:
    """Every key of the composed config section reaches the spec with its value."""
    for key, value in cfg_part.items():
        assert key in spec_part, f"{where}.{key} did not reach the spec"
        if isinstance(value, dict):
            _contains(spec_part[key], value, f"{where}.{key}")
        else:
            assert spec_part[key] == value, f"{where}.{key}: {spec_part[key]!r} != {value!r}"


@pytest.mark.parametrize("group", GROUPS)
def test_every_option_of_every_group_validates_and_every_key_is_read(compose_cells, group):
    """Each file composes into a RunSpec whose components resolve and whose options are
    all read (unknown or unread keys raise ConfigError); the spec carries the option's
    own values, and no two options of a group give the same spec."""
    options = config_options(group)
    assert options, f"configs/{group} is empty"
    seen: dict[str, str] = {}
    for opt in options:
        extra = COMPANIONS.get((group, opt), [])
        ((cfg, choices),) = compose_cells(["experiment=single", f"{group}={opt}", *extra])
        assert choices[group] == opt
        spec = _check(cfg, choices)
        part = getattr(spec, group).model_dump(mode="json")
        if group == "backbone":  # summaries' own token limit is recorded beside the dump
            part = spec.recorded()["backbone"]
        wanted = cfg[group]
        if group == "system":  # system.resolver=auto is settled from the backbone
            wanted = settle_resolver(wanted, cfg["backbone"]["name"])
        _contains(part, wanted, f"configs/{group}/{opt}.yaml: {group}")
        blob = json.dumps(part, sort_keys=True)
        assert blob not in seen, f"{group}={opt} gives the same spec as {group}={seen[blob]}"
        seen[blob] = opt


@pytest.mark.parametrize("experiment", config_options("experiment"))
def test_every_experiment_cell_validates(compose_cells, experiment):
    cells = compose_cells([f"experiment={experiment}"])
    assert cells
    for cfg, choices in cells:
        spec = _check(cfg, choices)
        assert spec.suite == []


def test_unknown_key_names_the_key_and_the_file(compose_cells):
    ((cfg, choices),) = compose_cells(
        ["experiment=single", "system=rag_only", "+system.top_k_itemz=3"]
    )
    with pytest.raises(ConfigError, match=r"system\.top_k_itemz.*configs/system/rag_only\.yaml"):
        _check(cfg, choices)
    ((cfg, choices),) = compose_cells(["experiment=single", "+retriever.stagee=dense"])
    with pytest.raises(ConfigError, match=r"retriever\.stagee.*unknown key"):
        _check(cfg, choices)
    ((cfg, choices),) = compose_cells(["experiment=single", "+task.params.x=1"])
    with pytest.raises(ConfigError, match=r"task\.params\.x.*reads no params"):
        _check(cfg, choices)


def test_unknown_key_lists_the_valid_keys_closest_first(compose_cells):
    # A root key the config lacks (Hydra's "Could not override"), a component option
    # nothing reads, and a spec key nothing reads: each lists what is valid. A dotted key
    # may be one its config file leaves to the options model's default, so it composes
    # and the options model rejects it (with the valid keys, not only those in the file).
    ((cfg, choices),) = compose_cells(["experiment=single", "system.top_k_itemz=3"])
    with pytest.raises(ConfigError) as err:
        _check(cfg, choices)
    msg = str(err.value)
    assert "did you mean 'top_k_items'? valid keys of system: top_k_items, " in msg
    assert "rollback_mode" in msg and "configs/system/chronomem.yaml" in msg
    assert "\n" not in msg
    with pytest.raises(ConfigError, match=r"'seed'\? valid keys of the config: seed, .*dataset"):
        compose_cells(["experiment=single", "seedd=1"])
    with pytest.raises(ConfigError) as err:
        compose_cells(["experiment=single", "seedd=1"])
    assert "hydra" not in str(err.value).split("valid keys")[1]  # Hydra's node is not a key
    ((cfg, choices),) = compose_cells(["experiment=single", "+system.top_k_itemz=3"])
    with pytest.raises(ConfigError, match=r"did you mean 'top_k_items'\? valid keys of system: "):
        _check(cfg, choices)
    ((cfg, choices),) = compose_cells(["experiment=single", "+embedder.modle=x"])
    with pytest.raises(ConfigError, match=r"'model'\? valid keys of embedder: model, runtime"):
        _check(cfg, choices)
    # A backbone's options are checked against its constructor's signature.
    ((cfg, choices),) = compose_cells(["experiment=single", "+backbone.params.abstain_treshold=1"])
    with pytest.raises(ConfigError, match=r"did you mean 'abstain_threshold'\? valid keys"):
        _check(cfg, choices)


def test_mistyped_system_and_backbone_options_are_rejected(compose_cells):
    ((cfg, choices),) = compose_cells(["experiment=single", "system.top_k_items=many"])
    with pytest.raises(ConfigError, match=r"system\.top_k_items"):
        _check(cfg, choices)
    ((cfg, choices),) = compose_cells(["experiment=single", "system.rollback_mode=sideways"])
    with pytest.raises(ConfigError, match=r"system\.rollback_mode"):
        _check(cfg, choices)
    ((cfg, choices),) = compose_cells(
        ["experiment=single", "+backbone.params.abstain_treshold=0.2"]
    )
    with pytest.raises(ConfigError, match=r"backbone\.abstain_treshold"):
        _check(cfg, choices)
    ((cfg, choices),) = compose_cells(["experiment=single", "+dataset.params.max_querys=3"])
    with pytest.raises(ConfigError, match=r"dataset\.params\.max_querys"):
        _check(cfg, choices)


def test_a_plain_override_sets_an_option_its_file_leaves_at_the_default(compose_cells):
    # configs/system/chronomem.yaml and configs/dataset/locomo_session.yaml name neither
    # key (the options models hold the defaults); `key=value` without `+` still sets it.
    ((cfg, choices),) = compose_cells(
        ["experiment=single", "system.top_k_items=4", "dataset.params.max_boundary=4"]
    )
    spec = resolve_cell(_check(cfg, choices), choices=choices).spec
    assert spec.system.options["top_k_items"] == 4
    assert spec.dataset.params["max_boundary"] == 4
    ((cfg, choices),) = compose_cells(["experiment=single"])
    spec = resolve_cell(_check(cfg, choices), choices=choices).spec
    assert spec.system.options["top_k_items"] == 8  # ChronoMemOptions' default, recorded


def test_mab_revision_must_be_a_commit(compose_cells):
    ((cfg, choices),) = compose_cells(
        ["experiment=single", "dataset=mab_accurate_retrieval", "+dataset.params.revision=main"]
    )
    with pytest.raises(ConfigError, match="not a commit sha"):
        _check(cfg, choices)


def test_retriever_stage_reaches_the_store_and_the_run_id(compose_cells):
    ids = {}
    for opt, stage in (("bm25", "lexical"), ("dense", "dense"), ("hybrid", "hybrid")):
        ((cfg, ch),) = compose_cells(["experiment=single", f"retriever={opt}", "reranker=none"])
        spec = spec_from_config(cfg, choices=ch)
        provider = resolve_cell(spec, choices=ch).build_store_provider()
        assert provider.store_options["stage"] == stage
        store = provider.new_store()
        assert store.stage == stage
        store.close()
        ids[opt] = run_id(spec, "sha")
    assert len(set(ids.values())) == 3


def test_run_id_covers_query_file_bytes_and_ignores_paths(compose_cells):
    ((cfg, ch),) = compose_cells(["experiment=single", "task=selection"])
    spec = spec_from_config(cfg, choices=ch)
    a = run_id(spec, "data-sha", "q-sha-1")
    assert run_id(spec, "data-sha", "q-sha-1") == a
    assert run_id(spec, "data-sha", "q-sha-2") != a
    assert run_id(spec, "data-sha-2", "q-sha-1") != a
    moved = spec.model_copy(update={"paths": spec.paths.model_copy(update={"results_dir": "/x"})})
    assert run_id(moved, "data-sha", "q-sha-1") == a
    # A selection-only cell does not depend on the system or the backbone.
    ((cfg2, ch2),) = compose_cells(["experiment=single", "task=selection", "system=rag_only"])
    assert run_id(spec_from_config(cfg2, choices=ch2), "data-sha", "q-sha-1") == a


def test_user_query_ids_are_content_based(tmp_path, tiny_built):
    from data_builders.user_query_file import UserQueryError, load_user_queries

    built = tiny_built
    sid = built.streams[0].sample_id
    recs = [
        {"sample_id": sid, "query": "undo the first chat", "intent": "undo", "target_session": 1},
        {"sample_id": sid, "query": "back to the start", "target_session": 0},
    ]
    f = tmp_path / "q.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    ids = [q.query_id for q in load_user_queries(f, built)]
    f.write_text("\n" + "".join(json.dumps(r) + "\n" for r in reversed(recs)))
    assert sorted(q.query_id for q in load_user_queries(f, built)) == sorted(ids)
    recs[0]["query"] = "undo the first chat, please"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert {q.query_id for q in load_user_queries(f, built)} != set(ids)
    f.write_text("".join(json.dumps(recs[0]) + "\n" for _ in range(2)))
    with pytest.raises(UserQueryError, match="repeats line 1"):
        load_user_queries(f, built)


def test_main_job_stays_the_default_whatever_the_overrides(compose_cells):
    assert with_default_experiment([]) == ["experiment=default"]
    assert with_default_experiment(["progress=false"]) == ["experiment=default", "progress=false"]
    assert with_default_experiment(["experiment=smoke"]) == ["experiment=smoke"]
    cells = compose_cells(with_default_experiment(["progress=false"]))
    assert len(cells) >= 12
    assert all(cfg["progress"] is False for cfg, _ in cells)


def test_main_job_lists_every_hand_written_request_set(compose_cells):
    """Every rollback request set is a main-job cell; the RQ4 selective-undo sets are read
    by the cells of their preset (experiment=selective), the headline one by most. A
    development set (``*_dev*.jsonl``: what the request parser was tuned on) is not a
    benchmark set and is left out."""
    files = sorted((REPO_ROOT / "data_builders" / "user_queries").glob("*.jsonl"))
    files = [f for f in files if "_dev" not in f.stem]
    assert files
    cells = compose_cells(["experiment=default"])
    listed = {
        Path(cfg["dataset"]["queries_file"]).name
        for cfg, _ in cells
        if cfg["dataset"].get("queries_file")
    }
    rq4 = {  # its kind's params model holds the file (SelectiveParams.heldout)
        Path(resolve_cell(spec_from_config(cfg, choices=ch), choices=ch).params.heldout).name
        for cfg, ch in compose_cells(["experiment=selective"])
    }
    assert "locomo_forget_heldout.jsonl" in rq4
    assert {f.name for f in files} <= listed | rq4


def test_suite_override_clash_names_the_cell(compose_cells, hydra_ctx):
    from chronobench.runner.experiment import compose

    cfg, _ = compose(["experiment=smoke", "system=rag_only"])
    with pytest.raises(ConfigError, match=r"suite cell 2 .*system=chronomem"):
        expand_suite(cfg, ["experiment=smoke", "system=rag_only"])
    # An override no cell sets applies to every cell; one equal to a cell's is fine.
    cells = compose_cells(["experiment=smoke", "seed=3", "dataset=tiny"])
    assert {cfg["seed"] for cfg, _ in cells} == {3}


_LAZY_CHECK = """
import json, sys
from chronobench.runner.components import DATASETS, RERANKERS, SELECTORS, TASKS
names = {
    "selectors": SELECTORS.names(), "rerankers": RERANKERS.names(),
    "tasks": TASKS.names(), "datasets": DATASETS.names(),
}
heavy = (
    "torch", "sentence_transformers", "nltk", "chronomem.rerank",
    "chronobench.runner.datasets", "chronobench.tracks.repair.run", "data_builders",
)
before = [m for m in heavy if m in sys.modules]
RERANKERS.resolve("feature")  # resolving one entry imports exactly its module
after = [m for m in heavy if m in sys.modules]
print(json.dumps({"names": names, "before": before, "after": after}))
"""


def test_registries_are_lazy_and_report_unknown_names():
    """Listing every registry's names imports none of their targets (nor torch or the
    builders); resolving one imports its module."""
    proc = subprocess.run(
        [sys.executable, "-c", _LAZY_CHECK], capture_output=True, text=True, cwd=REPO_ROOT
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"bm25", "dense", "hybrid", "chronomem"} <= set(out["names"]["selectors"])
    assert {"none", "feature", "cross_encoder"} <= set(out["names"]["rerankers"])
    assert "benchmark" in out["names"]["tasks"] and "locomo" in out["names"]["datasets"]
    assert out["before"] == []
    assert out["after"] == ["chronomem.rerank"]
    from chronobench.runner.components import RERANKERS

    with pytest.raises(ConfigError, match="unknown reranker 'nope'.*feature"):
        RERANKERS.resolve("nope")


def test_missing_optional_backbone_package_fails_before_any_work(compose_cells):
    import importlib.util

    from chronobench.errors import MissingDependencyError

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    ((cfg, ch),) = compose_cells(
        ["experiment=single", "backbone=vllm_qwen25_7b", "task=generation"]
    )
    spec = spec_from_config(cfg, choices=ch)  # validates without importing vllm
    with pytest.raises(MissingDependencyError, match="needs the 'vllm' package"):
        resolve_cell(spec, choices=ch)
    # A cell that builds no backbone does not need its packages.
    ((cfg, ch),) = compose_cells(["experiment=single", "backbone=vllm_qwen25_7b", "task=selection"])
    assert not resolve_cell(spec_from_config(cfg, choices=ch), choices=ch).backbone_checked
