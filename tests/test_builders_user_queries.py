"""User-supplied rollback query files: conversion and validation errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _builders_fixtures import TINY_LOCOMO

from chronobench.data.io import load_built
from data_builders import LOCOMO, build_dataset
from data_builders.probes import ProbePool, attach_probes
from data_builders.user_query_file import UserQueryError, load_user_queries


@pytest.fixture(scope="module")
def turn_ds(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    out = tmp_path_factory.mktemp("uq")
    return load_built(build_dataset(LOCOMO, granularity="turn", source=TINY_LOCOMO, out_dir=out))


def _write(tmp_path: Path, *lines: object) -> Path:
    p = tmp_path / "queries.jsonl"
    p.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return p


def test_user_queries_resolve_and_get_builder_probes(turn_ds, tmp_path: Path) -> None:  # noqa: ANN001
    p = _write(
        tmp_path,
        {"sample_id": "tiny-1", "query": "Go back to before the bakery job", "target_session": 2},
        {
            "sample_id": "tiny-1",
            "query": "Forget everything",
            "intent": "undo",
            "target_version": 0,
        },
    )
    qs = load_user_queries(p, turn_ds)
    assert [q.target_version for q in qs] == [8, 0]
    assert all(q.source == "user" for q in qs) and qs[1].intent == "undo"
    stream = turn_ds.streams[0]
    pool = ProbePool.model_validate(turn_ds.pools[stream.stream_id])
    expected = attach_probes(pool, stream, qs[0].query_id, 8)
    own = [pr for pr in qs[0].probes if pr.kind != "final_qa"]  # final_qa: add_final_probes
    assert own == expected and any(pr.kind == "future_qa" for pr in expected)


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("{not json", "line 1: not valid JSON"),
        ({"query": "x", "target_version": 1}, "line 1: field 'sample_id'"),
        (
            {"sample_id": "nope", "query": "x", "target_version": 1},
            "field 'sample_id'.*not in this dataset",
        ),
        ({"sample_id": "tiny-1", "query": "x"}, "field 'target_session': give exactly one"),
        (
            {"sample_id": "tiny-1", "query": "x", "target_version": 999},
            "field 'target_version'.*past",
        ),
        (
            {"sample_id": "tiny-1", "query": "x", "target_session": 7},
            "field 'target_session'.*not a session",
        ),
        (
            {"sample_id": "tiny-1", "query": "x", "intent": "redo", "target_version": 1},
            "field 'intent'",
        ),
        (
            {"sample_id": "tiny-1", "query": "x", "target_version": 1, "extra": 1},
            "field 'extra': unknown",
        ),
    ],
)
def test_user_query_errors(turn_ds, tmp_path: Path, line: object, match: str) -> None:  # noqa: ANN001
    with pytest.raises(UserQueryError, match=match):
        load_user_queries(_write(tmp_path, line), turn_ds)
