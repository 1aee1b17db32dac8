"""docs/query-files.md describes the query-file format the loader reads: its example
parses, its field table is the loader's field set, its error example is the loader's."""

from __future__ import annotations

import json
import re

import pytest

from data_builders.user_query_file import (
    FIELDS,
    INTENTS,
    UserQueryError,
    load_user_queries,
    read_query_lines,
)
from tests.conftest import REPO_ROOT

DOC = (REPO_ROOT / "docs" / "query-files.md").read_text()


def test_the_example_parses_and_the_table_lists_every_field(tmp_path):
    (example,) = re.findall(r"```json\n(.*?)```\n", DOC, re.S)
    path = tmp_path / "example.jsonl"
    path.write_text(example)
    assert len(read_query_lines(path)) == len(example.strip().splitlines()) == 3
    table = re.findall(r"^\| `(\w+)` \|", DOC, re.M)
    assert set(table) == FIELDS
    assert all(f"`{intent}`" in DOC for intent in INTENTS)


def test_the_documented_error_is_the_loaders(tmp_path, tiny_built):
    stream = tiny_built.streams[0]
    lines = [
        {"sample_id": stream.sample_id, "query": "go back to the start", "target_session": 0},
        {"sample_id": stream.sample_id, "query": "undo all of it", "intent": "undo",
         "target_version": 0},
        {"sample_id": stream.sample_id, "query": "forget the trip", "target_session": 40},
    ]  # fmt: skip
    path = tmp_path / "my_queries.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(UserQueryError) as err:
        load_user_queries(path, tiny_built)
    shown = "line 3: field 'target_session': 40 is not a session of"
    assert shown in DOC and shown in str(err.value)
    assert re.search(r"; choose 0 or one of \[\d", str(err.value))


def test_the_readme_links_the_page():
    assert "docs/query-files.md" in (REPO_ROOT / "README.md").read_text()


def test_the_optional_fields_example_parses(tmp_path):
    (example,) = re.findall(r"```jsonl\n(.*?)```\n", DOC, re.S)
    path = tmp_path / "styled.jsonl"
    path.write_text(example)
    lines = [rec for _, rec in read_query_lines(path)]
    assert {"style", "expect", "claim"} <= set().union(*lines)
