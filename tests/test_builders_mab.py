"""MemoryAgentBench builder on schema-faithful fixtures (all four splits)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _builders_fixtures import MAB_FIXTURES

from chronobench.data.io import load_built
from data_builders import MAB, DatasetError, build_dataset
from data_builders.mab import chunk_context, load_mab_rows
from data_builders.mab.conflict import parse_statement


def _build(split: str, out: Path, **kw: object) -> Path:
    return build_dataset(
        MAB, split=split, source=MAB_FIXTURES / f"{split}.jsonl", out_dir=out, chunk_size=30, **kw
    )


def test_fixture_schema_is_faithful() -> None:
    for split in ("Accurate_Retrieval", "Conflict_Resolution", "Long_Range_Understanding"):
        rows, _, sha = load_mab_rows(split, MAB_FIXTURES / f"{split}.jsonl")
        assert len(sha) == 64
        for r in rows:
            assert set(r) == {"context", "questions", "answers", "metadata"}
            assert {"source", "qa_pair_ids"} <= set(r["metadata"])


def test_accurate_retrieval(tmp_path: Path) -> None:
    ds = load_built(_build("Accurate_Retrieval", tmp_path))
    streams = {s.stream_id: s for s in ds.streams}
    assert ds.queries
    for q in ds.queries:
        first = q.anchor_version
        text = " ".join(op.text or "" for op in streams[q.stream_id].writes[first - 1].ops)
        qa = next(p for p in q.probes if p.meta["qa_id"] == q.query_id.rsplit("qa-", 1)[1])
        assert any(g.lower() in text.lower() for g in qa.answers + qa.future_answers)
        assert qa.kind == ("qa" if q.intent == "restore_to" else "future_qa")
        assert all(p.scoring == "mab" for p in q.probes)


def test_conflict_resolution_counterfactual(tmp_path: Path) -> None:
    folder = _build("Conflict_Resolution", tmp_path)
    ds = load_built(folder)
    assert ds.manifest["skipped"]["statement:unparsed"] == 1
    assert ds.manifest["skipped"]["pairs"] == 3
    undo = next(q for q in ds.queries if "Acme" in q.text and q.intent == "undo")
    probe = next(p for p in undo.probes if "Acme" in p.question)
    assert probe.answers == ["Dana Whitfield"] and probe.future_answers == ["Leo Marsh"]
    for q in ds.queries:
        assert "Whitfield" not in q.text and "Marsh" not in q.text  # no values in queries


def test_parse_statement_shapes() -> None:
    assert parse_statement("The capital of Veloria is Port Anselm.").val == "Port Anselm"
    assert parse_statement("Ravi Dutt's sport is cricket.").subj == "Ravi Dutt"
    assert parse_statement("Quentin Ames works for the weather office.") is None


def test_long_range_summary_caveat(tmp_path: Path) -> None:
    ds = load_built(_build("Long_Range_Understanding", tmp_path))
    assert any("whole book" in c for c in ds.manifest["caveats"])
    summaries = [p for q in ds.queries for p in q.probes if p.kind == "summary"]
    assert summaries and all("whole book" in p.meta["caveat"] for p in summaries)
    assert any("Corvin first appears" in q.text for q in ds.queries)


def test_test_time_learning_unsupported(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="Test_Time_Learning is not supported"):
        _build("Test_Time_Learning", tmp_path)


def test_chunking_keeps_sentence_boundaries() -> None:
    text = "One two three. Four five six seven.\n\nEight nine. Ten eleven twelve."
    chunks = chunk_context(text, 5, "tokens")
    assert all(c.rstrip().endswith(".") for c in chunks)
    assert all(len(c.split()) <= 5 for c in chunks)
    assert " ".join(" ".join(c.split()) for c in chunks) == " ".join(text.split())


def test_parquet_source_and_determinism(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [
        json.loads(x) for x in (MAB_FIXTURES / "Accurate_Retrieval.jsonl").read_text().splitlines()
    ]
    path = tmp_path / "ar.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    a = build_dataset(
        MAB, split="Accurate_Retrieval", source=path, out_dir=tmp_path / "a", chunk_size=30
    )
    b = build_dataset(
        MAB, split="Accurate_Retrieval", source=path, out_dir=tmp_path / "b", chunk_size=30
    )
    assert (a / "queries.jsonl").read_bytes() == (b / "queries.jsonl").read_bytes()


def test_bad_mab_rows(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps(
            {"context": "x", "questions": ["q"], "answers": ["a"], "metadata": {"source": "s"}}
        )
        + "\n"
    )
    with pytest.raises(DatasetError, match=r"bad.jsonl: record row 0: field 'answers'"):
        load_mab_rows("Accurate_Retrieval", bad)
    with pytest.raises(DatasetError, match="not found"):
        load_mab_rows("Accurate_Retrieval", tmp_path / "missing.parquet")
