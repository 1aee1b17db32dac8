"""CachedBackbone: real SQLite, hits/misses, persistence, resume after a crash."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from _backbones_fixtures import make_request, texts

from chronobench.backbones import CachedBackbone, request_key
from chronobench.backbones.extractive import ExtractiveBackbone
from chronobench.backbones.scripted import ScriptedBackbone
from chronobench.protocols import Completion, GenerationParams


class Flaky(ScriptedBackbone):
    """Fails on the n-th generate call, like a run killed mid-way."""

    def __init__(self, fail_on_call: int) -> None:
        super().__init__(lambda r: f"ans:{r.question}")
        self.fail_on_call = fail_on_call

    def generate(self, requests):  # type: ignore[no-untyped-def]
        if len(self.batch_sizes) + 1 == self.fail_on_call:
            self.batch_sizes.append(-1)
            raise RuntimeError("killed")
        return super().generate(requests)


def test_hits_misses_and_one_batch(tmp_path: Path) -> None:
    inner = ScriptedBackbone(lambda r: f"ans:{r.question}")
    reqs = [make_request(f"q{i}") for i in range(5)]
    with CachedBackbone(inner, tmp_path / "c.sqlite") as cache:
        assert texts(cache.generate(reqs[:3])) == ["ans:q0", "ans:q1", "ans:q2"]
        assert texts(cache.generate(reqs)) == [f"ans:q{i}" for i in range(5)]
        assert inner.batch_sizes == [3, 2]  # only misses, one batch per call
        stats = cache.stats.as_dict()
        assert (stats["hits"], stats["misses"], stats["calls"]) == (3, 5, 2)
        assert cache.stats.prompt_tokens > 0 and cache.stats.completion_tokens > 0
        assert len(cache) == 5


def test_duplicates_in_a_batch_are_generated_once(tmp_path: Path) -> None:
    inner = ScriptedBackbone(lambda r: r.question)
    with CachedBackbone(inner, tmp_path / "c.sqlite") as cache:
        assert texts(cache.generate([make_request("a"), make_request("a")])) == ["a", "a"]
        assert inner.batch_sizes == [1]


def test_persists_across_instances_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "c.sqlite"
    with CachedBackbone(ScriptedBackbone({"q": "first"}), path) as cache:
        cache.generate([make_request("q")])
    second = ScriptedBackbone({"q": "second"})
    with CachedBackbone(second, path) as cache:
        assert texts(cache.generate([make_request("q")])) == ["first"]
        assert second.batch_sizes == []
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_killed_run_resumes_from_written_chunks(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    reqs = [make_request(f"q{i}") for i in range(6)]
    with CachedBackbone(Flaky(fail_on_call=3), path, chunk_size=2) as cache:
        with pytest.raises(RuntimeError, match="killed"):
            cache.generate(reqs)
        assert len(cache) == 4  # two chunks committed before the crash
    inner = ScriptedBackbone(lambda r: f"ans:{r.question}")
    with CachedBackbone(inner, path) as cache:
        assert texts(cache.generate(reqs)) == [f"ans:q{i}" for i in range(6)]
        assert inner.batch_sizes == [2]


def test_reported_usage_is_kept_and_estimated_when_absent(tmp_path: Path) -> None:
    """A completion's token usage as the backbone reports it (estimated when it reports
    none, or returns a plain string), and a hit returns the same usage."""

    class Usage(ScriptedBackbone):
        def generate(self, requests):  # type: ignore[no-untyped-def]
            return [
                Completion(r.question, 11, 3) if r.question == "counted" else r.question
                for r in requests
            ]

    path = tmp_path / "c.sqlite"
    reqs = [make_request("counted"), make_request("plain")]
    with CachedBackbone(Usage(), path) as cache:
        counted, plain = cache.generate(reqs)
        assert (counted.text, counted.prompt_tokens, counted.completion_tokens) == (
            "counted",
            11,
            3,
        )
        assert plain.text == "plain" and plain.prompt_tokens and plain.completion_tokens
        assert cache.stats.prompt_tokens == 11 + plain.prompt_tokens
    with CachedBackbone(ScriptedBackbone(), path) as cache:
        assert cache.generate(reqs) == [counted, plain]


def test_key_covers_params_task_model_and_config() -> None:
    base = make_request("q", ("ctx",))
    bb = ExtractiveBackbone()
    k = request_key(bb, base)
    assert k == request_key(ExtractiveBackbone(), make_request("q", ("ctx",)))
    assert k != request_key(bb, make_request("q", ("ctx",), params=GenerationParams(seed=1)))
    assert k != request_key(bb, make_request("q", ("ctx",), task="summary"))
    assert k != request_key(bb, make_request("q", ("other",)))
    assert k != request_key(ExtractiveBackbone(abstain_threshold=0.1), base)
    assert k != request_key(ExtractiveBackbone(model="extractive-v2"), base)


def test_wrong_output_count_is_an_error(tmp_path: Path) -> None:
    inner = ScriptedBackbone()
    inner.generate = lambda requests: []  # type: ignore[method-assign]
    with (
        CachedBackbone(inner, tmp_path / "c.sqlite") as cache,
        pytest.raises(RuntimeError, match="0 outputs for 1"),
    ):
        cache.generate([make_request("q")])


def test_stats_convert_to_dict_and_chunk_zero_means_one_call(tmp_path: Path) -> None:
    inner = ScriptedBackbone(lambda r: r.question)
    with CachedBackbone(inner, tmp_path / "c.sqlite", chunk_size=0) as cache:
        cache.generate([make_request(f"q{i}") for i in range(3)])
        assert inner.batch_sizes == [3]
        assert dict(cache.stats) == cache.stats.as_dict()
        assert dict(cache.stats)["misses"] == 3
    with pytest.raises(ValueError, match="chunk_size"):
        CachedBackbone(inner, tmp_path / "c.sqlite", chunk_size=-1)


def _cache_worker(path: str, start: int, n: int) -> int:
    from chronobench.backbones import CachedBackbone as Cached
    from chronobench.backbones.scripted import ScriptedBackbone as Scripted

    with Cached(Scripted(lambda r: f"ans:{r.question}"), path, chunk_size=3) as cache:
        out = cache.generate([make_request(f"q{i}") for i in range(start, start + n)])
    return sum(o.text == f"ans:q{i}" for i, o in zip(range(start, start + n), out, strict=True))


@pytest.mark.slow  # writer subprocesses
def test_concurrent_writer_processes(tmp_path: Path) -> None:
    """Two processes (as in a joblib multirun) fill one cache file with overlapping keys."""
    import multiprocessing as mp

    path = str(tmp_path / "c.sqlite")
    with mp.get_context("spawn").Pool(2) as pool:
        assert pool.starmap(_cache_worker, [(path, 0, 60), (path, 30, 60)]) == [60, 60]
    with CachedBackbone(ScriptedBackbone(lambda r: "unused"), path) as cache:
        assert len(cache) == 90


def _reference_key(backbone, request) -> str:  # type: ignore[no-untyped-def]
    # The key's encoding as first written (one json.dumps of the whole payload): cached
    # calls are filed under these bytes, so the assembled key must equal it.
    import json
    from dataclasses import asdict

    from chronobench.hashing import sha256_text

    payload = {
        "backbone": backbone.name,
        "model": backbone.model,
        "config": getattr(backbone, "cache_config", {}),
        "messages": [[m.role, m.content] for m in request.messages],
        "params": asdict(request.params),
        "task": request.task,
        "context": list(request.context),
        "question": request.question,
    }
    return sha256_text(json.dumps(payload, sort_keys=True, ensure_ascii=False, default=list))


def _reference_prompt_sha256(request) -> str:  # type: ignore[no-untyped-def]
    import json

    from chronobench.hashing import sha256_text

    blob = json.dumps([[m.role, m.content] for m in request.messages], ensure_ascii=False)
    return sha256_text(blob)


def test_key_and_prompt_hash_keep_their_bytes() -> None:
    from chronobench.backbones.request_hash import prompt_sha256

    odd = 'quote " backslash \\ tab \t newline \n émoji 🎉 ünï \u2028 ctrl \x01'
    backbones = [
        ExtractiveBackbone(),
        ExtractiveBackbone(abstain_threshold=0.25, model="extractive-v2"),
        ScriptedBackbone(),
    ]
    requests = [
        make_request("q"),
        make_request(odd, (odd, "b", "")),
        make_request("q", tuple(f"item {i} {odd}" for i in range(50)), task="summary"),
        # long contents: the part before the last blank line is encoded once, then reused
        make_request("first?", tuple(f"item {i} {odd}" for i in range(400))),
        make_request("second?", tuple(f"item {i} {odd}" for i in range(400))),
        make_request("q", ("x",), params=GenerationParams(seed=3, stop=("\n", "Q:"))),
    ]
    for bb in backbones:
        for req in requests:
            assert request_key(bb, req) == _reference_key(bb, req)
            assert request_key(bb, req) == _reference_key(bb, req)  # context served once seen
            assert prompt_sha256(req) == _reference_prompt_sha256(req)
    fresh = make_request(odd, ("c",))  # the prompt hash before any key was computed
    assert prompt_sha256(fresh) == _reference_prompt_sha256(fresh)
    # A long view hashed first by its prompt hash, then keyed from the kept hash state.
    view = tuple(f"line {i} {odd}" for i in range(300))
    for q in ("third?", "fourth?", odd):
        fresh = make_request(q, view)
        assert prompt_sha256(fresh) == _reference_prompt_sha256(fresh)
        assert request_key(backbones[0], fresh) == _reference_key(backbones[0], fresh)


def test_summaries_get_their_own_token_limit(tmp_path) -> None:
    """The summaries' limit reaches the backbone and the cache key; QA is untouched."""
    from chronobench.backbones.scripted import ScriptedBackbone
    from chronobench.protocols import ChatMessage, GenerationParams, GenerationRequest

    def req(task: str) -> GenerationRequest:
        return GenerationRequest(
            messages=(ChatMessage("user", task),), params=GenerationParams(32), task=task
        )

    inner = ScriptedBackbone()
    with CachedBackbone(inner, tmp_path / "c.sqlite", summary_max_new_tokens=200) as cached:
        cached.generate([req("qa"), req("summary")])
    assert [r.params.max_new_tokens for r in inner.requests] == [32, 200]


def test_the_summary_limit_is_in_the_run_id_only_when_set(compose_cells) -> None:
    from chronobench.spec import run_id, spec_from_config

    ((cfg, ch),) = compose_cells(["experiment=single", "task=generation"])
    plain = spec_from_config(cfg, choices=ch)
    gen = {**cfg["backbone"]["generation"], "summary_max_new_tokens": 200}
    limited = spec_from_config(
        {**cfg, "backbone": {**cfg["backbone"], "generation": gen}}, choices=ch
    )
    assert "summary_max_new_tokens" not in plain.identity()["backbone"]["generation"]
    assert limited.recorded()["backbone"]["generation"]["summary_max_new_tokens"] == 200
    assert run_id(limited, "sha") != run_id(plain, "sha")
