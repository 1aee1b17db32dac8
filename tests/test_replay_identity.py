"""A replayed run's identity names the replies it answers with, not where their file sits.

The run id, the spec hash, the repair track's backbone hash and the known set's identity
all hash ``BackboneSpec.identity()``, where a pinned ``completions_sha256`` stands for the
``completions`` path; resolving a cell pins it from one read of the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from chronobench.backbones.offline import ReplayBackbone, read_completions
from chronobench.errors import ConfigError
from chronobench.protocols import ChatMessage, GenerationParams, GenerationRequest
from chronobench.runner.cell import make_run_id
from chronobench.runner.components import resolve_cell
from chronobench.runner.known import reference_identity
from chronobench.spec import BackboneSpec, spec_from_config, spec_sha256

REPLIES = [
    {"id": "p1", "text": "Paris", "model": "m", "prompt_tokens": 30, "completion_tokens": 2},
    {
        "id": "p2",
        "text": "Not mentioned",
        "model": "m",
        "prompt_tokens": 41,
        "completion_tokens": 3,
    },
]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _cfg(completions: Path, **params: Any) -> dict[str, Any]:
    return {
        "dataset": {"name": "locomo", "granularity": "session", "params": {}},
        "task": {"selection": False, "qa": True, "summary": False, "k": 5},
        "seed": 0,
        "embedder": {"model": "minilm"},
        "retriever": {"stage": "hybrid", "rrf_k0": 60, "candidates": 100},
        "reranker": {"name": "feature", "top_k": 20},
        "selectors": ["bm25"],
        "system": {"name": "chronomem", "resolver": "none"},
        "backbone": {
            "name": "replay",
            "model": "m",
            "params": {"completions": str(completions), **params},
        },
    }


def _resolved(completions: Path, **params: Any) -> Any:
    return resolve_cell(spec_from_config(_cfg(completions, **params))).spec


def _known_identity(spec: Any) -> dict[str, Any]:
    data = SimpleNamespace(manifest_sha256="data-sha")
    return reference_identity(spec, data, backbone=None, reader="evidence_sessions")


def test_the_same_replies_at_two_paths_give_one_run_id(tmp_path: Path) -> None:
    a = _write(tmp_path / "here" / "completions.jsonl", REPLIES)
    b = _write(tmp_path / "elsewhere" / "other-name.jsonl", REPLIES)
    assert make_run_id(_cfg(a), "sha-1") == make_run_id(_cfg(b), "sha-1")
    spec_a, spec_b = _resolved(a), _resolved(b)
    assert spec_sha256(spec_a) == spec_sha256(spec_b)
    assert _known_identity(spec_a) == _known_identity(spec_b)
    assert str(tmp_path) not in json.dumps(spec_a.identity())
    # The recorded spec still says where the file was read from, and which replies.
    params = spec_a.recorded()["backbone"]["params"]
    assert params["completions"] == str(a)
    assert params["completions_sha256"] == read_completions(a).sha256


def test_one_changed_reply_gives_another_run_id(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", REPLIES)
    changed = [REPLIES[0], {**REPLIES[1], "text": "Not mentioned."}]
    b = _write(tmp_path / "b.jsonl", changed)
    assert make_run_id(_cfg(a), "sha-1") != make_run_id(_cfg(b), "sha-1")
    assert _known_identity(_resolved(a)) != _known_identity(_resolved(b))
    # A token count is served too (the run's usage figures), so it is named as well.
    c = _write(tmp_path / "c.jsonl", [REPLIES[0], {**REPLIES[1], "completion_tokens": 4}])
    assert make_run_id(_cfg(a), "sha-1") != make_run_id(_cfg(c), "sha-1")
    # And an added reply: the file answers more prompts than before.
    d = _write(tmp_path / "d.jsonl", [*REPLIES, {"id": "p3", "text": "x", "model": "m"}])
    assert make_run_id(_cfg(a), "sha-1") != make_run_id(_cfg(d), "sha-1")


def test_line_order_and_bookkeeping_fields_leave_the_id_alone(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", REPLIES)
    noted = [{**r, "engine": "packaged", "runtime": {"batch_size": 16}} for r in REPLIES]
    b = _write(tmp_path / "b.jsonl", list(reversed(noted)))
    assert read_completions(a).sha256 == read_completions(b).sha256
    assert make_run_id(_cfg(a), "sha-1") == make_run_id(_cfg(b), "sha-1")


def test_the_backbone_identity_keeps_the_digest_not_the_path() -> None:
    pinned = BackboneSpec(
        name="replay", model="m", params={"completions": "x.jsonl", "completions_sha256": "d"}
    )
    assert pinned.identity()["params"] == {"completions_sha256": "d"}
    # Unpinned (or any other backbone's params): as before, so other run ids stay.
    plain = BackboneSpec(name="record", model="m", params={"completions": "x.jsonl", "live": "q"})
    assert plain.identity()["params"] == {"completions": "x.jsonl", "live": "q"}
    assert plain.identity() == plain.model_dump(mode="json", exclude={"chunk_size"})


def test_the_file_is_read_once_per_content(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.jsonl", REPLIES)
    first = read_completions(path)
    assert read_completions(path) is first  # unchanged file: the same read, not hashed again
    assert ReplayBackbone(str(path), "m", first.sha256).completions_sha256 == first.sha256
    _write(path, [*REPLIES, {"id": "p3", "text": "x", "model": "m"}])  # grown
    grown = read_completions(path)
    assert grown is not first and grown.sha256 != first.sha256 and "p3" in grown.answers


def _request(text: str) -> GenerationRequest:
    return GenerationRequest(
        messages=(ChatMessage("user", text),), params=GenerationParams(max_new_tokens=8), task="qa"
    )


def test_a_pinned_run_answers_from_the_read_its_id_names(tmp_path: Path) -> None:
    """The file changes between resolving the cell and building its backbone (a generator
    still writing it): the backbone serves the replies the run id names, or refuses."""
    from chronobench.backbones.offline import prompt_id

    req = _request("Where?")
    path = _write(tmp_path / "c.jsonl", [{"id": prompt_id(req), "text": "Paris", "model": "m"}])
    spec = _resolved(path)
    pinned = spec.backbone.params["completions_sha256"]
    _write(path, [{"id": prompt_id(req), "text": "Lyon", "model": "m"}])  # rewritten since
    backbone = ReplayBackbone(**{"model": "m", **spec.backbone.params})
    assert backbone.generate([req])[0].text == "Paris"
    assert backbone.completions_sha256 == pinned
    # Another process (no earlier read of it) finds the file changed: a clear refusal.
    moved = _write(tmp_path / "copy.jsonl", [{"id": prompt_id(req), "text": "Lyon", "model": "m"}])
    with pytest.raises(
        ValueError, match=f"not the {pinned} that backbone.params.completions_sha256 names"
    ):
        ReplayBackbone(str(moved), "m", pinned)
    # A fresh resolve names the file as it is now.
    assert _resolved(path).backbone.params["completions_sha256"] != pinned


def test_a_stated_digest_that_the_file_does_not_match_is_a_config_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.jsonl", REPLIES)
    with pytest.raises(ConfigError, match="completions_sha256.*backbone"):
        _resolved(path, completions_sha256="0" * 64)
    good = read_completions(path).sha256
    assert _resolved(path, completions_sha256=good).backbone.params["completions_sha256"] == good


def test_a_missing_file_stops_the_cell_at_resolve_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no completions file.*chronobench generate"):
        _resolved(tmp_path / "absent.jsonl")


def test_the_60_query_preset_names_its_copied_file_as_the_gathered_one(
    compose_cells: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """scripts/publish_qwen60.sh gathers the replies in one file and publishes a copy at
    the preset's own path (results/completions/llm_cpu_qwen60.jsonl): every cell gets the
    same run id from either, and another id once a reply differs."""
    gathered = _write(tmp_path / "qwen60" / "completions.jsonl", REPLIES)
    monkeypatch.chdir(tmp_path)  # the preset's relative path, under a scratch checkout
    _write(Path("results/completions/llm_cpu_qwen60.jsonl"), list(reversed(REPLIES)))
    assert len(compose_cells(["experiment=llm_cpu_qwen60"])) == 12

    def ids(completions: str | None) -> list[str]:
        out = []
        for resolved, choices in compose_cells(["experiment=llm_cpu_qwen60"]):
            assert resolved["backbone"]["params"]["completions"] == (
                "results/completions/llm_cpu_qwen60.jsonl"
            )
            if completions is not None:
                resolved["backbone"]["params"]["completions"] = completions
            out.append(make_run_id(spec_from_config(resolved, choices=choices), "data-sha"))
        return out

    published = ids(None)
    assert ids(str(gathered)) == published
    _write(gathered, [REPLIES[0], {**REPLIES[1], "text": "No"}])
    assert not set(ids(str(gathered))) & set(published)
