"""The store and item-index benchmarks and the demo run end to end (small and hash-embedded
here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronobench.bench.store import synthetic_writes
from chronobench.commands.bench import main as bench_main
from chronomem.demo import main as demo_main
from tests.conftest import REPO_ROOT


def test_bench_store_small(capsys: pytest.CaptureFixture[str]) -> None:
    small = ["--writers", "1", "2", "--commits-per-writer", "4"]
    assert bench_main(["store", "--sizes", "60", "--embedder", "hash", *small]) == 0
    out = capsys.readouterr().out
    labels = ("commit", "rollback truncate", "rollback revert", "resolve", "bytes on disk")
    for label in (*labels, "redact one item by id"):
        assert label in out
    assert "2 concurrent writers" in out and "| sqlite |" in out


def test_bench_store_saved_runs_print_as_one_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = ["--writers", "2", "--commits-per-writer", "3"]
    for backend in ("sqlite", "sqlite-full"):
        args = ["store", "--sizes", "30", "--backend", backend, *small]
        assert bench_main([*args, "--save", str(tmp_path / f"{backend}.json")]) == 0
    capsys.readouterr()
    saved = [str(tmp_path / "sqlite.json"), str(tmp_path / "sqlite-full.json")]
    assert bench_main(["store", "--report", *saved]) == 0
    out = capsys.readouterr().out
    assert "| sqlite | hash | 30 |" in out and "| sqlite-full | hash | 30 |" in out
    assert "- sqlite: WAL, synchronous=NORMAL" in out and "- sqlite-full: WAL" in out
    assert "| sqlite-full | " in out.split("write throughput")[1]
    assert "sqlite-full, 2 writers: client CPU" in out
    with pytest.raises(SystemExit, match="no such file"):
        bench_main(["store", "--report", str(tmp_path / "none.json")])


def test_bench_store_postgres_beside_sqlite(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    backends = ["sqlite", "sqlite-full", "postgres"]
    args = ["store", "--sizes", "40", "--backend", *backends, "--pg-url", pg_url]
    assert bench_main([*args, "--writers", "2", "--commits-per-writer", "3"]) == 0
    out = capsys.readouterr().out
    assert "== postgres: 40 writes" in out and "== sqlite: 40 writes" in out
    assert "== sqlite-full: 40 writes" in out and "sqlite-full:  2 concurrent writers" in out
    assert "| postgres | hash | 40 |" in out and "postgres:  2 concurrent writers" in out
    # each backend says what a returned commit survives; ratios come from this one run
    assert "- sqlite: WAL, synchronous=NORMAL" in out
    assert "- sqlite-full: WAL, synchronous=FULL" in out
    assert "- postgres: synchronous_commit=on, fsync=on" in out
    assert "| sqlite | 40 |" in out and "| sqlite-full | 40 |" in out  # the ratio rows
    # each throughput run says what a commit cost: the writers' CPU, and the server's WAL
    assert "client CPU" in out and "flushes per commit" in out
    # and, the server being local, its writers' backends' CPU: a figure, never negative
    cost = [line for line in out.splitlines() if line.startswith("- postgres, 2 writers:")]
    assert len(cost) == 1 and "server CPU " in cost[0] and "n/a" not in cost[0], cost
    assert "server CPU -" not in out
    # the writers' backends, still open at the second reading, have handed in their WAL
    assert " WAL 0 records" not in cost[0], cost


def test_bench_items_agrees_with_the_backend(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny = str(REPO_ROOT / "tests" / "fixtures" / "locomo_tiny.json")
    args = ["items", "--locomo", tiny, "--repeat", "1", "--backend", "sqlite", "postgres"]
    assert bench_main([*args, "--pg-url", pg_url]) == 0
    out = capsys.readouterr().out
    assert "sqlite: 45/45 lists identical (100.0%)" in out  # 9 questions x 5 states
    assert "postgres: 45/45 lists identical (100.0%)" in out
    assert "match_items" in out and "index build" in out


def test_bench_rejects_tiny_streams() -> None:
    with pytest.raises(SystemExit):
        bench_main(["store", "--sizes", "5"])


def test_synthetic_writes_are_deterministic() -> None:
    assert synthetic_writes(30, seed=3) == synthetic_writes(30, seed=3)


def test_demo_selective_undo_keeps_the_later_hobby(capsys: pytest.CaptureFixture[str]) -> None:
    # The default request and embedder, as a user runs it: "crypto coins" names the note's
    # "CryptoMax coins" only by meaning (MiniLM); the hash embedder, which has none, refuses
    # it as a weak match, as it should.
    assert demo_main([]) == 0
    out = capsys.readouterr().out
    after = out.split("Memory at HEAD after")[1]
    assert "CryptoMax" not in after and "half marathon" in after
    assert "later commits v6 kept" in out and "Integrity check: OK" in out
    assert demo_main(["--embedder", "hash"]) == 2
    assert "refused" in capsys.readouterr().out


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--embedder", "hash", "--query", "undo the CryptoMax coins note", "--mode", "revert"]
    assert demo_main(args) == 0
    out = capsys.readouterr().out
    assert "intent = undo" in out and "Integrity check: OK" in out
    after = out.split("Memory at HEAD after")[1]
    assert "CryptoMax" not in after


def test_demo_refuses_a_content_free_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_main(["--embedder", "hash", "--query", "undo that", "--mode", "revert"]) == 2
    assert "refused" in capsys.readouterr().out
    assert demo_main(["--embedder", "hash", "--query", "forget that"]) == 2
    assert "names no content" in capsys.readouterr().out


def test_bench_agreement_pairs_runs_and_counts_same_top1(tmp_path, capsys) -> None:
    import json

    def results(name: str, tops: list[int]) -> Path:
        run = tmp_path / name / "runs" / f"locomo-session__selection__selection__{name}"
        run.mkdir(parents=True)
        rows = [
            {
                "kind": "selection",
                "selector": "bm25",
                "query_id": f"q{i}",
                "gold_version": 1,
                "ranked": [[t, 1.0]],
            }  # fmt: skip
            for i, t in enumerate(tops)
        ]
        (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return tmp_path / name

    a, b = results("sqlite", [1, 1, 2, 3]), results("postgres", [1, 1, 2, 4])
    assert bench_main(["agreement", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "| locomo-session | bm25 | 4 | 3 (75.0%) | 50.0 | 50.0 |" in out
    assert bench_main(["agreement", str(a), str(b), "--min", "0.98"]) == 1
    capsys.readouterr()
    assert bench_main(["agreement", str(a), str(b), "--show"]) == 0
    out = capsys.readouterr().out
    assert "3 of 4 identical; 1 with a different top version" in out
    assert "locomo-session__selection__selection bm25 q3: top 3 -> 4" in out


def test_bench_branches_small_on_both_backends(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "branches.md"
    args = ["branches", "--writes", "8", "16", "--items", "3", "--repeat", "1"]
    args += ["--backend", "sqlite", "postgres", "--pg-url", pg_url, "--out", str(out_file)]
    assert bench_main(args) == 0
    out = capsys.readouterr().out
    for backend in ("sqlite", "postgres"):
        assert f"Branch and checkout cost, {backend}, 3 items" in out
        assert f"{backend}: 16 writes filled" in out
    assert "| operation | 8 writes | 16 writes | 16 / 8 |" in out
    for label in ("first branch from the past (builds the index)", "branch mid-history"):
        assert out.count(f"| {label} |") == 2
    assert out.count("| branch mid-history, SQLite VM steps (thousands) |") == 1
    assert out.count("| branch at HEAD, rows read (PostgreSQL statistics) |") == 1
    assert out_file.read_text().count("| branch at HEAD |") == 2
