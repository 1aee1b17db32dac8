"""The generation loop answers in chunks as it goes: the same rows as one call per cell,
and no more than one chunk of prompts waiting for the backbone."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from chronobench.backbones.extractive import ExtractiveBackbone
from chronobench.results.io import SampleLog
from chronobench.runner.generation import run_generation
from chronobench.runner.params import LLM_FREE_CHUNK, answer_chunk
from chronobench.systems.stores import StoreProvider
from tests._protocol_fixtures import ALL_KINDS, build_tiny, make_system, run_data


class _Recording:
    """The extractive reader, noting each call's size and how many queries the system
    had been asked when the call came."""

    name = "extractive"
    model = "extractive-v1"

    def __init__(self, asked: list[int]) -> None:
        self.inner = ExtractiveBackbone()
        self.asked = asked
        self.calls: list[tuple[int, int]] = []

    def generate(self, requests: Any) -> Any:
        self.calls.append((len(requests), len(self.asked)))
        return self.inner.generate(requests)


class _Counting:
    """A system that counts its rollbacks (one per query) and otherwise passes through."""

    def __init__(self, system: Any, asked: list[int]) -> None:
        self.system = system
        self.asked = asked
        self.name = system.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self.system, name)

    def open_session(self) -> Any:
        session = self.system.open_session()
        rollback = session.rollback

        def counted(request: str) -> Any:
            self.asked.append(1)
            return rollback(request)

        session.rollback = counted
        return session


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_tiny(tmp_path_factory.mktemp("tiny"))


def _run(built: Any, path: Path, chunk_size: int) -> tuple[bytes, _Recording, int]:
    stores = StoreProvider(embedder="hash")
    asked: list[int] = []
    backbone = _Recording(asked)
    try:
        system = _Counting(make_system("full_history", stores), asked)
        written = run_generation(
            run_data(built),
            system,
            backbone,
            SampleLog(path),
            set(),
            kinds=set(ALL_KINDS),
            chunk_size=chunk_size,
            progress=False,
        )
    finally:
        stores.close()
    assert written == len(path.read_text(encoding="utf-8").splitlines())
    return path.read_bytes(), backbone, len(asked)


def test_chunks_as_it_goes_give_the_rows_of_one_call(built: Any, tmp_path: Path) -> None:
    whole, one_call, queries = _run(built, tmp_path / "whole.jsonl", 0)
    chunked, recording, _ = _run(built, tmp_path / "chunked.jsonl", 3)
    assert chunked == whole  # byte for byte, in the same order
    assert len(one_call.calls) == 1 and one_call.calls[0][1] == queries
    sizes = [n for n, _ in recording.calls]
    assert sum(sizes) == one_call.calls[0][0]
    assert all(n == 3 for n in sizes[:-1]) and 0 < sizes[-1] <= 3
    # Answered while the queries are still being asked, not after the last one.
    assert recording.calls[0][1] < queries


def _spec(name: str, chunk_size: int) -> Any:
    return SimpleNamespace(backbone=SimpleNamespace(name=name, chunk_size=chunk_size))


def test_answer_chunk_streams_an_llm_free_reader_only() -> None:
    assert answer_chunk(_spec("extractive", 0)) == LLM_FREE_CHUNK
    assert answer_chunk(_spec("extractive", 7)) == 7
    # A language model keeps its configured batching (0: the whole cell in one call).
    assert answer_chunk(_spec("vllm", 0)) == 0
    assert answer_chunk(_spec("smollm2", 16)) == 16
