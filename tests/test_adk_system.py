"""system=adk_chronomem: the benchmark through the ADK service chooses what the store chooses
(both run by the runner on the tiny fixture)."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

if importlib.util.find_spec("google.adk") is None:  # CI installs the adk extra: fail there
    if os.environ.get("CI"):
        raise ImportError("google-adk is not installed; .ci/run installs '.[dev,adk]'")
    pytest.skip("google-adk not installed (pip install -e '.[adk]')", allow_module_level=True)

from chronobench.data.schema import MemoryOp, Stream, Write
from chronobench.protocols import public_writes
from chronobench.systems import SystemContext, create_system
from chronobench.systems.base import APP
from chronobench.systems.stores import StoreProvider

pytestmark = pytest.mark.slow  # MiniLM: version selection depends on the embedder


def _rows(folder) -> dict[str, dict]:
    lines = (folder / "samples.jsonl").read_text().splitlines()
    return {r["sample_id"]: r for r in map(json.loads, lines)}


def test_adk_system_selects_like_the_store_and_reads_restored_state(tiny_run, tiny_built):
    adk = _rows(tiny_run("task=generation", "system=adk_chronomem"))
    ref = _rows(tiny_run("task=generation", "system=chronomem"))
    assert adk and adk.keys() == ref.keys()
    for sid, row in adk.items():
        assert (row["selected_version"], row["candidates"]) == (
            ref[sid]["selected_version"],
            ref[sid]["candidates"],
        ), sid
    # What a probe reads comes from the restored state: nothing written after the target
    # (final_qa probes are asked at the last version, without rollback).
    checked = 0
    for row in adk.values():
        if row["probe_kind"] == "final_qa" or row["selected_version"] != row["gold_version"]:
            continue
        stream = next(s for s in tiny_built.streams if s.stream_id == row["stream_id"])
        future = {op.text for w in stream.writes if w.version > row["gold_version"] for op in w.ops}
        assert not future & set(row["context"]), row["sample_id"]
        checked += 1
    assert checked


def _stream(*writes: Write) -> Stream:
    return Stream(
        stream_id="s", dataset="x", granularity="session", sample_id="s", writes=list(writes)
    )


def test_adk_system_rejects_streams_it_cannot_express():
    stream = _stream(
        Write(version=1, ops=[MemoryOp(op="add", item_id="a", text="one")]),
        Write(version=2, ops=[MemoryOp(op="update", item_id="a", text="two")]),
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


def test_adk_system_stamps_events_with_when_the_write_happened():
    # ADK stamps an event with the clock unless told; the store must see the stream's own
    # dates, or dated requests read against the run's day.
    stream = _stream(
        Write(
            version=1,
            valid_time="1:56 pm on 8 May, 2023",
            ops=[MemoryOp(op="add", item_id="a", text="one")],
        ),
        Write(version=2, ops=[MemoryOp(op="add", item_id="b", text="two")]),
    )
    system = create_system("adk_chronomem", SystemContext(stores=StoreProvider(embedder="hash")))
    system.ingest(public_writes(stream))
    versions = system.full.store.versions(APP, system.user)
    stamps = [v.valid_time for v in versions[1:]]
    system.close()
    assert stamps[0] == "2023-05-08T13:56:00+00:00"
    assert stamps[1] is not None and not stamps[1].startswith("2023-05-08")  # ADK's own clock
