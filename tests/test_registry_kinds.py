"""Component kinds held in the one registry (issue 29 item 1): systems' floor flag, repair
methods with their labels, peer memories with their requirements."""

from __future__ import annotations

import pytest

from chronobench.errors import MissingDependencyError
from chronobench.registry import Registry


def test_floors_are_flagged_on_their_entries():
    from chronobench.systems.registry import SYSTEMS, is_floor

    floors = {n for n in SYSTEMS.names() if is_floor(n)}
    assert {"no_memory", "always_abstain", "constant_answer", "floor_restore_v1"} <= floors
    assert not {"chronomem", "chronomem_oracle", "rag_only"} & floors
    # Tables still print a floor's label; the flag, not the label, says what it is.
    assert all(SYSTEMS.label(n).startswith("floor:") for n in floors)
    assert not is_floor("not_a_system")


def test_repair_methods_are_one_registry():
    from chronobench.tracks.repair.methods import LABELS, METHODS, REPAIR_METHODS, is_floor

    assert list(METHODS) == list(LABELS) == [e.name for e in REPAIR_METHODS.entries()]
    assert LABELS["dgr"] == "Dependency-guided repair"
    assert all(callable(f) for f in METHODS.values())
    assert [m for m in METHODS if is_floor(m)] == [
        "text_floor",
        "text_floor_replay",
        "text_taint_replay",
    ]


def test_peers_are_registry_entries_with_their_requirements():
    from chronobench.systems.peers import PEER_MEMORIES, PEERS, install_hint, peer_spec

    assert PEER_MEMORIES.entries()[0].name == "chronomem"  # first row of the table
    assert "chronomem" not in PEERS and len(PEERS) == 7
    entry = peer_spec("mem0")
    assert ("mem0", install_hint("mem0")) in entry.requires
    assert install_hint("mem0") == "pip install 'chronobench[peers-mem0]'"
    with pytest.raises(KeyError):
        peer_spec("nope")


def test_a_missing_dotted_requirement_is_reported_not_raised():
    reg = Registry("thing")
    reg.register("x", "chronobench.errors:ConfigError", requires=[("no_such_pkg.sub", "pip x")])
    assert reg.entry("x").missing_modules() == ["no_such_pkg.sub"]
    with pytest.raises(MissingDependencyError, match="pip x"):
        reg.check_available("x")


def test_datasets_carry_their_builder_defaults_and_check():
    from chronobench.errors import ConfigError
    from chronobench.runner.components import DATASETS
    from chronobench.runner.datasets import checked_dataset
    from chronobench.spec import DatasetSpec
    from data_builders import LOCOMO, MAB
    from data_builders.locomo.params import LocomoParams
    from data_builders.mab.params import MabParams

    locomo, mab = DATASETS.entry("locomo").load(), DATASETS.entry("mab").load()
    assert (locomo, mab) == (LOCOMO, MAB)
    assert (locomo.params, mab.params) == (LocomoParams, MabParams)
    assert locomo.plan is not None and DATASETS.entry("repair").load().plan is None
    assert locomo.defaults()["max_boundary"] == 10 and len(mab.defaults()["revision"]) == 40
    assert DATASETS.entry_points == "chronobench.datasets"  # plug-ins join this group
    bad = DatasetSpec.model_validate(
        {"name": "mab", "granularity": "x", "params": {"split": "x", "revision": "main"}}
    )
    with pytest.raises(ConfigError, match="not a commit sha"):
        checked_dataset(mab, bad, where="here")
    # Normalised: the recorded keys filled with their defaults, other defaults left out.
    spec = DatasetSpec(name="locomo", granularity="turn", params={"max_recall": 1})
    params = checked_dataset(locomo, spec, where="here").params
    assert params == {"max_queries_per_stream": 40, "max_answerable": 3, "max_future": 3,
                      "max_boundary": 10, "max_recall": 1}  # fmt: skip
