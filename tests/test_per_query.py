"""The compact per-query file (chronobench/results/per_query.py): written when a cell
runs, only scored probes, labels from protocol 3, versions with session, date and
summary, byte-stable, copied on publish, and read back."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from chronobench.results.per_query import (
    QUERIES_FILE,
    QueryFile,
    gold_text,
    outcome,
    probe_label,
    query_lines,
)


@pytest.fixture(scope="module")
def full_cell(tiny_run) -> Path:
    """A tiny-fixture cell with RQ1 selection and RQ2/RQ3 generation."""
    return tiny_run("task=all", "system=chronomem")


def _samples(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines() if x]


def test_cell_writes_one_line_per_query_with_every_scored_probe(full_cell: Path) -> None:
    qf = QueryFile(full_cell / QUERIES_FILE)
    rows = _samples(full_cell)
    probes = [r for r in rows if r["kind"] == "probe"]
    selections = [r for r in rows if r["kind"] == "selection"]
    assert qf.header["run_id"] == full_cell.name
    assert qf.header["cell"]["system"] == "chronomem"
    assert len(qf.queries) == len({r["query_id"] for r in rows})
    # Only the scored probes: as many as the sample rows, none of the rest of the battery.
    assert sum(len(q["probes"]) for q in qf.queries) == len(probes)
    assert sum(len(q["selectors"]) for q in qf.queries) == len(selections)
    by_query = {q["query_id"]: q for q in qf.queries}
    for r in probes:
        line = by_query[r["query_id"]]
        assert line["gold"] == r["gold_version"]
        assert line["request"] == r["request"]
        if r["probe_kind"] != "final_qa":
            assert line["chosen"] == r["selected_version"]
    for r in selections:
        part = by_query[r["query_id"]]["selectors"][r["selector"]]
        assert part["chosen"] == r["ranked"][0][0]
        assert part["outcome"] == outcome(part["chosen"], r["gold_version"])


def test_labels_answers_gold_and_versions(full_cell: Path) -> None:
    qf = QueryFile(full_cell / QUERIES_FILE)
    rows = {
        (r["query_id"], r["probe"]["meta"].get("battery_id"), probe_label(r)): r
        for r in _samples(full_cell)
        if r["kind"] == "probe"
    }
    labels = Counter()
    for q in qf.queries:
        stream = q["stream_id"]
        gold = qf.version(stream, q["gold"])
        # Each version named has its session, date and a summary (v0: the empty memory).
        if q["gold"] == 0:
            assert "empty memory" in gold["summary"]
        else:
            assert gold["session"] == q["gold"] and gold["date"] and gold["summary"]
        for p in q["probes"]:
            labels[p["label"]] += 1
            row = rows[(q["query_id"], p["item"], p["label"])]
            assert p["label"] == probe_label(row)
            assert qf.item(stream, p["item"])["question"] == row["probe"]["question"]
            if p["label"] != "summary":
                assert p["answer"] == row["prediction"][:300]
            assert p["score"] == pytest.approx(row["scores"][p["metric"]], abs=1e-4)
            meta = row["probe"]["meta"]
            assert (meta.get("boundary") == "before") == (p["label"] == "keep")
            assert (meta.get("boundary") == "after") == (p["label"] == "forget")
            text = qf.gold(stream, p)
            if p["label"] == "keep" and row["probe"]["answers"]:
                assert row["probe"]["answers"][0] in text
            if p["label"] == "forget":
                assert text.startswith("(abstain")
    assert labels["keep"] and labels["forget"] and labels["summary"]


def test_same_rows_same_bytes(full_cell: Path, tiny_built, tmp_path: Path) -> None:
    from types import SimpleNamespace

    from chronobench.runner.drilldown import write_cell_queries
    from chronobench.runner.known import read_known

    data = (full_cell / QUERIES_FILE).read_bytes()
    assert data[4:8] == b"\0\0\0\0"  # gzip with no timestamp: the bytes name no time
    qf = QueryFile(full_cell / QUERIES_FILE)
    built = SimpleNamespace(
        folder=tiny_built.path, granularity="session", streams=tiny_built.streams
    )
    write_cell_queries(
        tmp_path,
        qf.header["run_id"],
        qf.header["cell"],
        built,
        _samples(full_cell),
        read_known(full_cell),
    )
    assert (tmp_path / QUERIES_FILE).read_bytes() == data


def test_labels_outcomes_and_leaks_of_synthetic_rows() -> None:
    def row(kind: str, **meta) -> dict:
        return {
            "kind": "probe",
            "sample_id": f"s{len(meta)}{kind}",
            "query_id": "q1",
            "stream_id": "s",
            "request": "undo that",
            "intent": "undo",
            "source": "template",
            "gold_version": 4,
            "selected_version": 2,
            "probe_kind": kind,
            "category": meta.pop("category", None),
            "prediction": "a" * 500,
            "probe": {
                "question": f"Q {kind}?",
                "answers": ["x"],
                "future_answers": [],
                "meta": meta,
            },
            "scores": {"future_abstain": 0.0, "future_leak": 1.0, "qa_f1": 0.5},
        }

    rows = [
        row("qa", battery_id="k", boundary="before"),
        row("future_qa", battery_id="f", boundary="after"),
        row("qa", battery_id="a"),
        row("qa", battery_id="c5", category=5),
        row("qa", battery_id="cf", counterfactual=True),
        row("future_qa", battery_id="fu"),
    ]
    assert [probe_label(r) for r in rows] == [
        "keep",
        "forget",
        "answerable",
        "adversarial",
        "conflict",
        "future",
    ]
    (line,), items = query_lines(rows)
    assert line["outcome"] == "early" and line["chosen"] == 2
    assert [p["label"] for p in line["probes"]] == [
        "keep",
        "forget",
        "answerable",
        "adversarial",
        "conflict",
        "future",
    ]
    assert all(len(p["answer"]) <= 300 for p in line["probes"])
    assert line["leaks"] == 6 and line["probes"][1]["leak"] == ["future_leak"]
    assert items["s"]["k"] == {"question": "Q qa?", "answers": ["x"]}
    assert gold_text("forget", items["s"]["f"]) == "(abstain: not in memory) · later: x"
    assert outcome(None, 3) == "none" and outcome(5, 3) == "late" and outcome(3, 3) == "exact"


def test_publish_copies_the_file(full_cell: Path, tmp_path: Path, copy_run) -> None:
    from chronobench.leaderboard.build import _sync_published
    from chronobench.leaderboard.runs import collect_runs

    copy_run(full_cell, tmp_path)
    runs = collect_runs(tmp_path, published=False)
    _sync_published(tmp_path, runs, {full_cell.name})
    published = tmp_path / "published" / full_cell.name / QUERIES_FILE
    assert published.read_bytes() == (full_cell / QUERIES_FILE).read_bytes()
    with gzip.open(published, "rt") as fh:
        assert json.loads(fh.readline())["type"] == "run"
