"""The store benchmark and the demo run end to end (small and hash-embedded here)."""

from __future__ import annotations

import pytest

from chronobench.bench.cli import main as bench_main
from chronobench.bench.store import synthetic_writes
from chronobench.memory.demo import main as demo_main


def test_bench_store_small(capsys: pytest.CaptureFixture[str]) -> None:
    small = ["--writers", "1", "2", "--commits-per-writer", "4"]
    assert bench_main(["store", "--sizes", "60", "--embedder", "hash", *small]) == 0
    out = capsys.readouterr().out
    for label in ("commit", "rollback truncate", "rollback revert", "resolve", "bytes on disk"):
        assert label in out
    assert "2 concurrent writers" in out and "| sqlite |" in out


def test_bench_store_postgres_beside_sqlite(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["store", "--sizes", "40", "--backend", "sqlite", "postgres", "--pg-url", pg_url]
    assert bench_main([*args, "--writers", "2", "--commits-per-writer", "3"]) == 0
    out = capsys.readouterr().out
    assert "== postgres: 40 writes" in out and "== sqlite: 40 writes" in out
    assert "| postgres | hash | 40 |" in out and "postgres:  2 concurrent writers" in out


def test_bench_rejects_tiny_streams() -> None:
    with pytest.raises(SystemExit):
        bench_main(["store", "--sizes", "5"])


def test_synthetic_writes_are_deterministic() -> None:
    assert synthetic_writes(30, seed=3) == synthetic_writes(30, seed=3)


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_main(["--embedder", "hash", "--query", "undo the CryptoMax coins note"]) == 0
    out = capsys.readouterr().out
    assert "intent = undo" in out and "Integrity check: OK" in out
    after = out.split("Memory at HEAD after")[1]
    assert "CryptoMax" not in after


def test_demo_refuses_a_content_free_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_main(["--embedder", "hash", "--query", "undo that"]) == 2
    assert "refused" in capsys.readouterr().out
