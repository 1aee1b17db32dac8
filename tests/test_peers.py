"""Peer memory systems (issue 16): each adapter's write / search / rollback / state on a
tiny stream, the restore-fidelity metrics on known cases, own targeting, and one peer
through the runner. Offline; the hash embedder keeps it fast. A peer whose extra is not
installed is skipped with the pip command (CI installs ``.[dev]``, which pulls them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chronobench.metrics.fidelity import (
    Fidelity,
    compare_state,
    discarded_items,
    gold_state,
    leakage,
    measure,
    retained_on_disk,
    summarize,
)
from chronobench.systems.peers import PEERS, create_peer, install_hint, missing_modules
from chronobench.systems.peers.base import Memory, PeerWrite, folder_files
from chronobench.systems.peers.targeting import own_target
from tests.conftest import REPO_ROOT

TOPICS = ["sailing in Bergen", "a violin recital", "the sourdough starter", "moving to Lisbon"]
WRITES = [
    PeerWrite(
        f"s#{v}",
        v,
        f"2023-05-0{v}",
        ((f"w{v}a", f"Ann talked about {TOPICS[v - 1]}."), (f"w{v}b", f"Note {v} for Ann.")),
    )
    for v in range(1, 5)
]
ALL_PEERS = ["chronomem", *PEERS]


@pytest.fixture(scope="module")
def embedding():
    from chronobench.systems.peers.embedding import PeerEmbedding

    return PeerEmbedding("hash")


def _need(name: str) -> None:
    missing = missing_modules(name)
    if missing:
        pytest.skip(f"{name} not installed ({', '.join(missing)}): {install_hint(name)}")


@pytest.mark.parametrize("name", ALL_PEERS)
def test_peer_write_search_rollback_state(name, embedding, tmp_path):
    _need(name)
    peer = create_peer(name, tmp_path / "p", embedding)
    for w in WRITES:
        peer.add(w)
    assert compare_state(peer.state(), gold_state(WRITES, 4)) == (0, 0, 0)
    best = peer.search("violin recital", 3)[0]
    assert (best.item_id, best.version) == ("w2a", 2)
    peer.close()

    # A reopened folder is the same memory (the bench copies post-exposure folders).
    peer = create_peer(name, tmp_path / "p", embedding)
    info = peer.rollback_to(2)
    assert info.native is type(peer).native_rollback
    fid = measure(peer, WRITES, 2, files=folder_files(tmp_path / "p"), k=3)
    if name == "adk_rewind_user_state":
        # ADK's rewind is session-scoped: user: state keeps the discarded writes.
        assert (fid.missing, fid.extra, fid.stale) == (0, 4, 0)
        assert fid.leaked == fid.probes > 0
    else:
        assert (fid.missing, fid.extra, fid.stale) == (0, 0, 0), info
        assert fid.leaked == 0
    peer.close()


@pytest.mark.parametrize("name", ["mem0", "langgraph_store"])
def test_delete_removes_the_searched_memory_and_keeps_the_rest(name, embedding, tmp_path):
    """RQ4's optional ``delete``: the peer's own API removes what its search returned."""
    from chronobench.systems.forgetting import supports_delete

    _need(name)
    assert supports_delete(name)
    peer = create_peer(name, tmp_path / "p", embedding)
    for w in WRITES:
        peer.add(w)
    hit = peer.search("violin recital", 1)
    assert [h.item_id for h in hit] == ["w2a"]
    peer.delete(hit)
    gold = {k: t for k, t in gold_state(WRITES, 4).items() if k != "w2a"}
    assert compare_state(peer.state(), gold) == (0, 0, 0)
    peer.close()


def test_peers_without_delete_are_named_with_a_reason():
    from chronobench.systems.forgetting import NOT_RUN, supports_delete

    for name in PEERS:
        if not missing_modules(name):
            assert supports_delete(name) or name in NOT_RUN, name


@pytest.mark.parametrize("name", ["chronomem", "langgraph_checkpointer", "adk_rewind"])
def test_rollback_to_empty_version(name, embedding, tmp_path):
    _need(name)
    peer = create_peer(name, tmp_path / "p", embedding)
    for w in WRITES[:2]:
        peer.add(w)
    peer.rollback_to(0)
    assert peer.state() == []
    peer.close()


def test_mem0_inversion_reports_what_it_leaves(embedding, tmp_path):
    _need("mem0")
    peer = create_peer("mem0", tmp_path / "m", embedding)
    for w in WRITES:
        peer.add(w)
    info = peer.rollback_to(1)
    assert not info.native
    assert info.detail["inverted"]["ADD"] == 6
    # Inversion appends a DELETE row per memory removed: history only grows.
    assert info.detail["history_rows"] == {"before": 8, "after": 14}
    assert retained_on_disk(folder_files(tmp_path / "m"), discarded_items(WRITES, 1), {}, 10) > 0
    peer.close()


def test_langgraph_checkpointer_keeps_discarded_checkpoints(embedding, tmp_path):
    _need("langgraph_checkpointer")
    peer = create_peer("langgraph_checkpointer", tmp_path / "g", embedding)
    for w in WRITES:
        peer.add(w)
    peer.rollback_to(1)
    history = list(peer.graph.get_state_history(peer.config))
    # Revert-forward: 4 write checkpoints + the update_state head; none deleted.
    assert len(history) == 5
    assert history[0].metadata["source"] == "update"
    peer.close()


# -- fidelity metrics on known cases ---------------------------------------------------


def test_compare_state_counts_missing_extra_stale():
    gold = {"a": "one", "b": "two", "c": "three"}
    state = [
        Memory("a", "one", 1),
        Memory("b", "TWO (edited)", 1),  # stale
        Memory("a", "one", 1),  # duplicate id: extra
        Memory("z", "later", 3),  # not in gold: extra
        Memory(None, "three", None),  # no id: matched by text
        Memory(None, "ghost", None),  # no id, no match: extra
    ]
    assert compare_state(state, gold) == (0, 3, 1)
    assert compare_state([], gold) == (3, 0, 0)


def test_gold_and_discarded_follow_the_stream():
    assert gold_state(WRITES, 0) == {}
    assert list(gold_state(WRITES, 2)) == ["w1a", "w1b", "w2a", "w2b"]
    assert [i for i, _ in discarded_items(WRITES, 3)] == ["w4a", "w4b"]


class _Fixed:
    """A peer whose search returns fixed texts (leakage known in advance)."""

    def __init__(self, texts):
        self.texts = texts

    def search(self, query, k):
        return [Memory(None, t, None) for t in self.texts[:k]]


def test_leakage_counts_discarded_text_returned_by_search():
    gold = gold_state(WRITES, 2)
    gone = discarded_items(WRITES, 2)
    assert leakage(_Fixed([gone[0][1]]), gone, gold, k=3, probes=10) == (4, 4)
    assert leakage(_Fixed([WRITES[0].items[0][1]]), gone, gold, k=3, probes=10) == (4, 0)


def test_retained_on_disk_and_summary(tmp_path):
    gone = discarded_items(WRITES, 2)
    (tmp_path / "f.bin").write_bytes(b"\x00" + gone[1][1].encode() + b"\x00")
    assert retained_on_disk([tmp_path / "f.bin"], gone, {}, 10) == 1
    rows = [Fidelity(4, 0, 0, 0, 4, 0, 4), Fidelity(4, 1, 2, 0, 4, 2, 0)]
    s = summarize(rows)
    assert s["exact"] == 50.0 and s["missing"] == 12.5 and s["extra"] == 25.0
    assert s["leaked"] == 25.0 and s["on_disk"] == 50.0


# -- own targeting ---------------------------------------------------------------------


class _Versions:
    def __init__(self, versions):
        self.versions = versions

    def search(self, query, k):
        return [Memory(f"i{v}", "t", v, 1.0 - i / 10) for i, v in enumerate(self.versions)]


def test_own_target_applies_the_intent():
    restore = own_target(_Versions([3, 3, 1]), "go back to when we talked about sailing")
    assert (restore.intent, restore.version) == ("restore_to", 3)
    assert [v for v, _ in restore.candidates] == [3, 1]
    undo = own_target(_Versions([3, 1]), "undo the conversation about sailing")
    assert (undo.intent, undo.version) == ("undo", 2)
    assert own_target(_Versions([]), "undo it").version is None


# -- registry and runner ---------------------------------------------------------------


def test_every_peer_has_a_config_and_registration_imports_no_peer_package():
    code = (
        "import sys; from chronobench.systems.registry import system_names; "
        "from chronobench.systems.peers import PEERS; "
        "assert set(PEERS) <= set(system_names()); "
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('langgraph', 'mem0', 'agents', 'google', 'qdrant_client', 'torch')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)
    for name in PEERS:
        assert (REPO_ROOT / "configs" / "system" / f"{name}.yaml").is_file(), name


@pytest.mark.slow
@pytest.mark.parametrize("name", ["openai_agents_session", "graphiti"])
def test_peer_runs_through_the_runner(name, tmp_path):
    _need(name)
    import os

    env = {
        **os.environ,
        "CHRONOBENCH_RESULTS": str(tmp_path / "results"),
        "CHRONOBENCH_DATA": str(tmp_path / "data"),
        "CHRONOBENCH_CACHE": str(tmp_path / "cache"),
    }
    args = ["run", "experiment=single", "dataset=tiny", f"system={name}", "task=qa"]
    args += ["leaderboard=false", "progress=false", "embedder.model=hash"]
    proc = subprocess.run(
        [sys.executable, "-m", "chronobench", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    runs = list(Path(tmp_path / "results" / "runs").iterdir())
    assert len(runs) == 1 and (runs[0] / "metrics.json").is_file()


# -- the memory-systems track (task=peers) and its leaderboard section --------------------


def _peers_cell(name: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    import os

    env = {
        **os.environ,
        "CHRONOBENCH_RESULTS": str(tmp_path / "results"),
        "CHRONOBENCH_DATA": str(tmp_path / "data"),
        "CHRONOBENCH_CACHE": str(tmp_path / "cache"),
    }
    args = ["run", "experiment=single", "dataset=tiny", "task=peers", "~system"]
    args += [f"+system.name={name}", "leaderboard=false", "progress=false", "embedder.model=hash"]
    return subprocess.run(
        [sys.executable, "-m", "chronobench", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=600,
    )


def test_peers_track_measures_both_targets_and_renders_the_section(tmp_path):
    _need("langgraph_store")
    for name in ("chronomem", "langgraph_store"):
        proc = _peers_cell(name, tmp_path)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    from chronobench.leaderboard.build import collect_runs, render

    runs = collect_runs(tmp_path / "results", local=True, published=False)
    assert sorted(r.system for r in runs) == ["chronomem", "langgraph_store"]
    store = next(r for r in runs if r.system == "langgraph_store").metrics
    assert store.peer["rollback"]["native"] is False
    assert store.peer["own_target"]["n"] > 0 and store.peer["fidelity"]["rollbacks"] > 0
    assert store.probes.all["rc_qa"].n > 0
    # Volatile figures stay out of metrics.json (reruns compare it byte for byte).
    assert "rollback_ms" not in json.dumps(store.to_json())
    from chronobench.tracks.peers.board import peers_section

    md, ids = peers_section(runs)
    assert "## Memory systems" in md and len(ids) == 2
    rows = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[1].startswith("| ChronoMem") and "**emulated**" in rows[2]
    # Fixture runs never reach the published leaderboard.
    assert "Memory systems" not in render(runs)[0]
    # `score` re-reads the samples but keeps what only the run could measure (the peer block).
    from chronobench.runner.scoring import rescore_run

    run_dir = next(p for p in (tmp_path / "results" / "runs").iterdir() if "langgraph" in p.name)
    before = (run_dir / "metrics.json").read_bytes()
    rescore_run(run_dir)
    assert (run_dir / "metrics.json").read_bytes() == before


def test_peers_track_rejects_what_it_would_not_read(tmp_path):
    from chronobench.errors import ConfigError
    from chronobench.runner.components import TASKS
    from chronobench.spec import RunSpec

    check_spec = TASKS.entry("peers").load().check_spec  # the params model, then the track's

    base = {
        "dataset": {"name": "locomo", "granularity": "session"},
        "system": {"name": "chronomem"},
        "backbone": {"name": "extractive", "model": "extractive"},
        "task": {"kind": "peers", "qa": True, "params": {"targets": 2}},
    }
    spec = RunSpec.model_validate(base)
    check_spec(spec)
    for bad, match in (
        ({"system": {"name": "nope"}}, "system.name"),
        ({"system": {"name": "chronomem", "top_k_items": 3}}, "system options"),
        ({"task": {"kind": "peers", "params": {"limit": 1}}}, "task.params.limit"),
        ({"task": {"kind": "peers", "params": {"targets": 0}}}, "task.params.targets"),
        ({"backbone": {"name": "vllm", "model": "x"}}, "one reader"),
    ):
        with pytest.raises(ConfigError, match=match):
            check_spec(RunSpec.model_validate({**base, **bad}))


def test_peers_preset_runs_every_peer_and_chronomem():
    from hydra import initialize_config_dir

    from chronobench.paths import config_dir
    from chronobench.runner.experiment import compose, expand_suite

    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg, _ = compose(["experiment=peers"])
        cells = expand_suite(cfg, ["experiment=peers"])
    names = [c["system"]["name"] for c, _ in cells]
    assert names == ["chronomem", *PEERS]
    assert all(c["task"]["kind"] == "peers" and c["dataset"]["name"] == "locomo" for c, _ in cells)
