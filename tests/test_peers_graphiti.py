"""Graphiti peer (issue 16): ``add_episode`` through the scripted LLM on embedded Kuzu,
graphiti's own search, ``remove_episode`` as the undo. Offline; the hash embedder keeps
it fast. Skipped with the pip command when graphiti-core or kuzu is not installed (CI
installs ``.[dev]``, which pulls ``peers-graphiti``). The write / search / rollback /
reopen round trip every peer passes is in tests/test_peers.py."""

from __future__ import annotations

import os

import pytest

from chronobench.metrics.fidelity import compare_state, gold_state, measure
from chronobench.systems.peers import create_peer, install_hint, missing_modules
from chronobench.systems.peers.base import PeerWrite, folder_files

_MISSING = missing_modules("graphiti")
pytestmark = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"graphiti not installed ({', '.join(_MISSING)}): {install_hint('graphiti')}",
)

WRITES = [
    PeerWrite("s#1", 1, "2023-05-01", (("a", "Ann adopted a grey cat named Miso."),)),
    PeerWrite(
        "s#2",
        2,
        "1:56 pm on 8 May, 2023",  # LoCoMo's session date form
        (("b", "Ann signed up for violin lessons."), ("c", "Ann's brother lives in Oslo.")),
    ),
    PeerWrite("s#3", 3, None, (("d", "Ann is training for the Bergen marathon."),)),
]


@pytest.fixture(scope="module")
def embedding():
    from chronobench.systems.peers.embedding import PeerEmbedding

    return PeerEmbedding("hash")


def _count(peer, label: str) -> int:
    rows, _, _ = peer._run(peer.driver.execute_query(f"MATCH (n:{label}) RETURN count(n) AS c"))
    return int(rows[0]["c"])


@pytest.fixture
def peer(embedding, tmp_path):
    p = create_peer("graphiti", tmp_path / "g", embedding)
    for w in WRITES:
        p.add(w)
    yield p
    p.close()


def test_add_episode_builds_the_graph_and_remove_episode_undoes_it(peer, tmp_path):
    # One episode, one entity and one fact (a RelatesToNode_ in Kuzu) per item.
    assert [_count(peer, t) for t in ("Episodic", "Entity", "RelatesToNode_")] == [4, 4, 4]
    assert compare_state(peer.state(), gold_state(WRITES, 3)) == (0, 0, 0)

    info = peer.rollback_to(1)
    assert info.native and info.detail["removed_episodes"] == 3
    # remove_episode drops the episode and the entities and facts only it mentioned.
    assert [_count(peer, t) for t in ("Episodic", "Entity", "RelatesToNode_")] == [1, 1, 1]
    fid = measure(peer, WRITES, 1, files=folder_files(tmp_path / "g"), k=3)
    assert (fid.missing, fid.extra, fid.stale, fid.leaked) == (0, 0, 0, 0)

    peer.rollback_to(0)
    assert peer.state() == [] and peer.search("Ann", 5) == []
    assert [_count(peer, t) for t in ("Episodic", "Entity", "RelatesToNode_")] == [0, 0, 0]


def test_search_is_graphiti_facts_mapped_to_items(peer):
    hits = peer.search("violin lessons", 2)
    assert 0 < len(hits) <= 2
    assert (hits[0].item_id, hits[0].version, hits[0].text) == (
        "b",
        2,
        "Ann signed up for violin lessons.",
    )
    assert hits[0].score > hits[-1].score or len(hits) == 1


def test_kuzus_flaky_full_text_failure_is_retried_once_and_counted(peer, monkeypatch):
    """Kuzu's QUERY_FTS_INDEX sometimes raises ``unordered_map::at`` and then succeeds
    on the same call; one retry, counted. Any other error, or the flake twice, is raised."""
    real = peer.graphiti.search
    fails = {"left": 1}

    async def flaky(*args, **kwargs):
        if fails["left"] > 0:
            fails["left"] -= 1
            raise RuntimeError("unordered_map::at")
        return await real(*args, **kwargs)

    want = peer.search("violin lessons", 2)
    monkeypatch.setattr(peer.graphiti, "search", flaky)
    assert peer.search("violin lessons", 2) == want and peer.search_retries == 1
    fails["left"] = 2
    with pytest.raises(RuntimeError, match="unordered_map"):
        peer.search("violin lessons", 2)

    async def broken(*args, **kwargs):
        raise RuntimeError("Binder exception: table does not exist")

    monkeypatch.setattr(peer.graphiti, "search", broken)
    with pytest.raises(RuntimeError, match="Binder"):
        peer.search("violin lessons", 2)
    assert peer.search_retries == 2


def test_reference_times_and_no_telemetry(peer):
    from graphiti_core.nodes import EpisodicNode

    from chronobench.systems.peers.graphiti import _EPOCH

    assert os.environ["GRAPHITI_TELEMETRY_ENABLED"] == "false"
    eps = {e.name: e for e in peer._run(EpisodicNode.get_by_group_ids(peer.driver, [""]))}
    assert eps["a"].valid_at.date().isoformat() == "2023-05-01"
    assert eps["b"].valid_at.date().isoformat() == "2023-05-08"  # parsed, not dropped
    # No timestamp: epoch + version minutes (Kuzu hands TIMESTAMPs back without tzinfo).
    assert eps["d"].valid_at.replace(tzinfo=None) == _EPOCH.replace(minute=3, tzinfo=None)


def test_scripted_llm_refuses_prompts_it_has_no_rule_for(peer):
    from pydantic import BaseModel

    class Unexpected(BaseModel):
        x: int

    class ExtractedEntities(BaseModel):  # graphiti's name, asked outside add()
        x: int

    peer.llm.current = ("a", "text")
    with pytest.raises(RuntimeError, match="unscripted LLM prompt"):
        peer._run(peer.llm._generate_response([], Unexpected))
    peer.llm.current = None
    with pytest.raises(RuntimeError, match="outside add"):
        peer._run(peer.llm._generate_response([], ExtractedEntities))


def test_remove_episode_rebuilds_a_surviving_entitys_summary(embedding, tmp_path):
    # graphiti #1837: a deleted fact stayed in a surviving entity's summary. In 0.31.2
    # remove_episode re-summarizes every surviving entity from its remaining episodes
    # (one LLM call each); the scripted LLM writes no summary, so the deleted facts go,
    # unless that call fails.
    peer = create_peer("graphiti", tmp_path / "g", embedding, shared_entity="Ann")
    try:
        for w in WRITES:
            peer.add(w)
        rows, _, _ = peer._run(
            peer.driver.execute_query("MATCH (n:Entity) RETURN n.name AS name, n.summary AS s")
        )
        assert [r["name"] for r in rows] == ["Ann"]  # resolved to one entity, no LLM dedupe
        # Graphiti appends each new fact to the summary (a self-edge's fact twice).
        assert "Bergen marathon" in rows[0]["s"]

        calls = []
        original = peer.llm._generate_response

        async def failing(messages, response_model=None, *args, **kwargs):
            raise RuntimeError("LLM outage")

        async def counting(messages, response_model=None, *args, **kwargs):
            calls.append(getattr(response_model, "__name__", None))
            return await original(messages, response_model, *args, **kwargs)

        # A rebuild that fails is logged, not raised: the episode is gone, its fact stays
        # in the summary (what #1837 reported).
        peer.llm._generate_response = failing
        peer.rollback_to(2)
        assert compare_state(peer.state(), gold_state(WRITES, 2)) == (0, 0, 0)
        rows, _, _ = peer._run(peer.driver.execute_query("MATCH (n:Entity) RETURN n.summary AS s"))
        assert "Bergen marathon" in rows[0]["s"]

        peer.llm._generate_response = counting
        peer.rollback_to(1)
        assert calls == ["SummarizedEntities"] * 2  # one rebuild per removed episode
        rows, _, _ = peer._run(peer.driver.execute_query("MATCH (n:Entity) RETURN n.summary AS s"))
        assert [r["s"] for r in rows] == [""]
        assert compare_state(peer.state(), gold_state(WRITES, 1)) == (0, 0, 0)
    finally:
        peer.close()
    with pytest.raises(ValueError, match="shared_entity='Ann'"):
        create_peer("graphiti", tmp_path / "g", embedding)
