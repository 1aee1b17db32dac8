"""Reads racing commits (issue 25): every read path sees one committed state.

Writer processes commit into the reader's scope while this process loops over every
read path. Each read must raise nothing, score finitely, and report the HEAD it read
(``last_read_head``); afterwards one fresh store replays the history and, as it
reaches each HEAD a read reported, must give that read's answer exactly.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chronomem import ChronoMem
from tests._memory_fixtures import APP, USER, hash_store, shared_location

pytestmark = pytest.mark.usefixtures("each_backend")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parents[1]
WRITERS, COMMITS = 3, 30  # bounded by counts, not by time


def ops_of(w: int, i: int) -> list[dict[str, str]]:
    """Writer ``w``'s ``i``-th commit: a new item, and every third one deletes an older one
    (closed spans: the alive filter and the index's closed rows take part)."""
    ops = [{"op": "add", "item_id": f"w{w}-{i}", "text": f"tok{i} note {i} by w{w}"}]
    if i % 3 == 2:
        ops.append({"op": "delete", "item_id": f"w{w}-{i - 2}"})
    return ops


def commit_of(mem: ChronoMem, w: int, i: int) -> int:
    return mem.commit(
        APP, USER, ops_of(w, i), source="w", reason="race",
        labels={"w": w, "i": i, "session": f"s{w}-{i // 5}"}, summary=f"tok{i} note {i}",
    )  # fmt: skip


# Child: waits for "go", then commits its share as fast as it can.
_WRITER = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from chronomem import ChronoMem, HashEmbedder
from tests.test_memory_read_race import commit_of
mem = ChronoMem(sys.argv[1], embedder=HashEmbedder())
print("ready", flush=True)
sys.stdin.readline()
for i in range(int(sys.argv[3])):
    commit_of(mem, int(sys.argv[2]), i)
"""

# Every read path over a cached index, as (name, call); each returns plain data.
READS: list[tuple[str, Any]] = [
    ("search", lambda m: _hits(m.search(APP, USER, "bobtok note", 10))),
    ("search_lexical", lambda m: _hits(m.search(APP, USER, "note w1", 8, mode="lexical"))),
    ("search_dense", lambda m: _hits(m.search(APP, USER, "tok3 note", 8, mode="dense"))),
    ("resolve_lexical", lambda m: m.resolve_lexical(APP, USER, "note", 5)),
    ("resolve_dense", lambda m: m.resolve_dense(APP, USER, "tok4 note", 5)),
    ("resolve_hybrid", lambda m: m.resolve_hybrid(APP, USER, "tok2 note", 5)),
    ("resolve", lambda m: m.resolve(APP, USER, "undo the note about tok5", 5)),
    ("resolve_episode", lambda m: m.resolve(APP, USER, "undo the whole conversation about tok7", 5)),
    ("plan", lambda m: _plan(m, "undo the note about tok6")),
    ("versions", lambda m: [(v.version_id, v.summary) for v in m.versions(APP, USER)]),
    ("snapshot", lambda m: sorted(m.snapshot(APP, USER).items())),
]  # fmt: skip


def _hits(hits: Any) -> list[tuple[str, str, float]]:
    return [(h.item_id, h.text, h.score) for h in hits]


def _plan(m: ChronoMem, query: str) -> Any:
    try:
        p = m.plan_rollback_by_nl_query(APP, USER, query)
    except Exception as exc:  # an UncertainRequestError is an answer too: compared as one
        return ("refused", type(exc).__name__)
    return (p.matched_version, p.target_version, p.confidence, p.runner_up, p.candidates, p.head)


def _scores(value: Any) -> list[float]:
    """Every float inside an answer (the scores)."""
    if isinstance(value, float):
        return [value]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _scores(v)]
    return []


@pytest.mark.slow  # writer subprocesses race the reads
def test_every_read_sees_one_state_while_processes_commit(tmp_path: Path) -> None:
    path = shared_location(tmp_path, "readrace")
    seed = [{"op": "add", "item_id": "seed", "text": "bobtok note"}]
    with hash_store(path) as mem:
        mem.commit(APP, USER, seed, source="s", reason="seed", summary="seed note")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, path, str(w), str(COMMITS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )  # fmt: skip
        for w in range(WRITERS)
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    seen: list[tuple[str, int, Any]] = []
    errors: list[str] = []
    with hash_store(path) as reader:
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        while any(p.poll() is None for p in procs):
            for name, read in READS:
                try:
                    got = read(reader)
                except Exception as exc:  # the race showed as ValueError / IndexError
                    errors.append(f"{name}: {type(exc).__name__}: {exc}")
                    continue
                head = reader.last_read_head
                assert head is not None
                seen.append((name, head, got))
        history = [(v.version_id, v.labels) for v in reader.versions(APP, USER)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert errors == []
    bad = [(n, h) for n, h, got in seen if any(not math.isfinite(s) for s in _scores(got))]
    assert bad == []
    heads = {h for _, h, _ in seen}
    assert len(heads) >= 3, "the reads did not overlap the writers"
    # One fresh store replays the history; at each HEAD a read reported, it answers alike.
    by_head: dict[int, list[tuple[str, Any]]] = {}
    for name, h, got in seen:
        by_head.setdefault(h, []).append((name, got))
    reads = dict(READS)
    with hash_store() as fresh:
        checked = 0
        for vid, labels in history[1:]:  # the root is not a commit
            if vid == 1:
                fresh.commit(APP, USER, seed, source="s", reason="seed", summary="seed note")
            else:
                assert commit_of(fresh, labels["w"], labels["i"]) == vid
            for name, got in by_head.get(vid, []):
                assert reads[name](fresh) == got, (name, vid)
                checked += 1
    assert checked == len(seen)
