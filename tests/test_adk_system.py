"""system=adk_chronomem: the benchmark through the ADK service chooses what the store chooses."""

from __future__ import annotations

import importlib.util
import os

import pytest

if importlib.util.find_spec("google.adk") is None:  # CI installs the adk extra: fail there
    if os.environ.get("CI"):
        raise ImportError("google-adk is not installed; .ci/run installs '.[dev,adk]'")
    pytest.skip("google-adk not installed (pip install -e '.[adk]')", allow_module_level=True)

from chronobench.data.io import load_built
from chronobench.data.schema import MemoryOp, Stream, Write
from chronobench.protocols import Question, public_writes
from chronobench.systems import SystemContext, create_system
from chronobench.systems.stores import StoreProvider
from data_builders import build_dataset

pytestmark = pytest.mark.slow  # MiniLM: version selection depends on the embedder


@pytest.fixture(scope="module")
def tiny(repo_root, tmp_path_factory):
    folder = build_dataset(
        "locomo",
        granularity="session",
        source=str(repo_root / "tests" / "fixtures" / "locomo_tiny.json"),
        out_dir=tmp_path_factory.mktemp("tiny"),
        max_queries_per_stream=6,
        max_answerable=2,
        max_future=2,
    )
    return load_built(folder)


def _outcomes(name: str, built, provider: StoreProvider) -> list[tuple]:
    system = create_system(name, SystemContext(stores=provider))
    out = []
    for stream in built.streams:
        system.ingest(public_writes(stream))
        for q in [q for q in built.queries if q.stream_id == stream.stream_id]:
            session = system.open_session()
            o = session.rollback(q.text)
            probe = next(p for p in q.probes if p.kind != "summary")
            (reply,) = session.ask([Question("q1", probe.question)])
            session.close()
            ctx = reply.request.context
            out.append((q.query_id, o.selected_version, [v for v, _ in o.candidates], ctx))
    system.close()
    return out


def test_adk_system_selects_like_the_store_and_reads_restored_state(tiny):
    provider = StoreProvider(embedder="minilm")
    adk = _outcomes("adk_chronomem", tiny, provider)
    ref = _outcomes("chronomem", tiny, provider)
    provider.close()
    assert len(adk) == len(ref) > 0
    assert [(q, v, c) for q, v, c, _ in adk] == [(q, v, c) for q, v, c, _ in ref]
    # What QA reads comes from the restored state: nothing written after the target.
    stream = tiny.streams[0]
    by_id = {q.query_id: q for q in tiny.queries}
    for qid, selected, _, context in adk:
        q = by_id[qid]
        if selected == q.target_version and q.stream_id == stream.stream_id:
            future = {
                op.text for w in stream.writes if w.version > q.target_version for op in w.ops
            }
            assert not future & set(context)


def test_adk_system_rejects_streams_it_cannot_express():
    stream = Stream(
        stream_id="s",
        dataset="x",
        granularity="session",
        sample_id="s",
        writes=[
            Write(version=1, ops=[MemoryOp(op="add", item_id="a", text="one")]),
            Write(version=2, ops=[MemoryOp(op="update", item_id="a", text="two")]),
        ],
    )
    system = create_system("adk_chronomem", SystemContext(stores=StoreProvider(embedder="hash")))
    with pytest.raises(ValueError, match="write 2 op 0 is 'update'"):
        system.ingest(public_writes(stream))
    system.close()


def test_bench_adk_prints_every_operation(capsys):
    from chronobench.bench.adk import run

    rows = run([20], "hash", repeat=3)
    ops = [r["operation"] for r in rows]
    assert ops == [
        "fill (N memories)",
        "add (1 event)",
        "search",
        "rollback preview",
        "rollback apply (revert)",
    ]
    assert "| 20 | search |" in capsys.readouterr().out
