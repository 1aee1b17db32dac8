"""Atomicity under SIGKILL, multi-process concurrency, and arbitrary query text."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem import ChronoMem, EmptyScopeError, HashEmbedder, UncertainRequestError
from tests._memory_fixtures import APP, USER, facts_store, hash_store, shared_location

pytestmark = pytest.mark.usefixtures("each_backend")  # every test on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parents[1]

# Child: a loop of commits and rollbacks; prints "start ..." before and "done <head>"
# after each operation, so the parent knows what had committed when killed. Each line
# goes out in one write: print() writes its parts separately on an unbuffered stream, so
# a kill could otherwise leave "done" without its head.
_CRASH_CHILD = """
import random, sys
from chronomem import ChronoMem, HashEmbedder
mem = ChronoMem(sys.argv[1], embedder=HashEmbedder())
rng = random.Random(int(sys.argv[2]))
def say(*parts):
    sys.stdout.write(" ".join(map(str, parts)) + "\\n")
    sys.stdout.flush()
say("done", mem.head("app", "ann"))
while True:
    ids = [v.version_id for v in mem.versions("app", "ann")]
    r = rng.random()
    if r < 0.7 or len(ids) < 3:
        say("start commit")
        ops = [{"op": "add", "item_id": f"i{rng.randrange(40)}", "text": f"fact {rng.random()}"}
               for _ in range(rng.randrange(1, 4))]
        head = mem.commit("app", "ann", ops, source="crash", reason="test")
    else:
        target = rng.choice(ids[:-1])
        mode = "truncate" if r < 0.85 else "revert" if r < 0.93 else "selective"
        say("start", mode, target)
        if mode == "selective":  # issue 27: one commit undone, later ones kept
            head = mem.revert_commits("app", "ann", [rng.choice(ids[1:])],
                                      with_dependents=rng.choice(["keep", "drop"])).new_head
        else:
            head = mem.rollback_to_version("app", "ann", target, mode=mode)
    say("done", head)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


@pytest.mark.slow  # subprocess crash/race loop
def test_sigkill_during_commit_and_rollback_loop(tmp_path: Path) -> None:
    path = shared_location(tmp_path, "crash")
    rng = random.Random(7)
    for round_ in range(5):
        proc = subprocess.Popen(
            [sys.executable, "-c", _CRASH_CHILD, path, str(round_)],
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
            cwd=ROOT,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("done")  # store open, loop starting
        # One whole operation first (a loaded machine can take longer than the sleep).
        first = [proc.stdout.readline().strip(), proc.stdout.readline().strip()]
        time.sleep(rng.uniform(0.05, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # A line cut short by the kill (no newline) was never said.
        lines = first + proc.stdout.read().split("\n")[:-1]
        done = [ln for ln in lines if ln.startswith("done")]
        assert len(done) >= 1, "child made no progress before the kill"
        last_done, last = int(done[-1].split()[1]), lines[-1].split()
        with hash_store(path) as mem:
            assert mem.check_integrity(APP, USER) == []
            head = mem.head(APP, USER)
            if last[0] == "done":
                assert head == last_done
            elif head != last_done:  # killed after COMMIT, before the "done" line
                hist = {v.version_id: v for v in mem.versions(APP, USER)}
                if last[1] == "truncate":
                    assert head == int(last[2])
                else:
                    assert hist[head].parent == last_done


_WRITER_CHILD = """
import sys, time
from chronomem import ChronoMem, HashEmbedder
mem = ChronoMem(sys.argv[1], embedder=HashEmbedder())
user, tag, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
worst = 0.0
for i in range(n):
    t = time.perf_counter()
    vid = mem.commit("app", user, [{"op": "add", "item_id": f"{tag}-{i}", "text": f"{tag} fact {i}"}],
                     source=tag, reason="concurrency")
    worst = max(worst, time.perf_counter() - t)
    print(vid, flush=True)
print("worst", worst, flush=True)
"""


@pytest.mark.slow  # subprocess crash/race loop
def test_concurrent_processes_lose_no_commit(tmp_path: Path) -> None:
    path = shared_location(tmp_path, "conc")
    hash_store(path).close()  # create the schema once, before the race
    n = 30
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER_CHILD, path, user, tag, str(n)],
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
            cwd=ROOT,
        )
        for user, tag in [(USER, "p0"), (USER, "p1"), (USER, "p2"), ("bob", "b0")]
    ]
    outs = [p.communicate(timeout=120)[0].splitlines() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    ann_ids = [int(x) for out in outs[:3] for x in out[:-1]]
    assert len(ann_ids) == len(set(ann_ids)) == 3 * n
    worst_other_user = float(outs[3][-1].split()[1])
    assert worst_other_user < 5.0  # a different user is never blocked for long
    with hash_store(path) as mem:
        hist = mem.versions(APP, USER)
        assert [v.seq for v in hist] == list(range(3 * n + 1))
        assert {v.version_id for v in hist[1:]} == set(ann_ids)
        assert len(mem.snapshot(APP, USER)) == 3 * n and len(mem.snapshot(APP, "bob")) == n
        assert mem.check_integrity(APP, USER) == [] and mem.check_integrity(APP, "bob") == []


_NASTY = st.one_of(
    st.text(max_size=200),
    st.sampled_from(
        [
            '"',
            '""',
            "NEAR(a b, 2)",
            "a AND",
            "OR",
            "NOT x",
            "*",
            "x*",
            "-a",
            "^b",
            "(((",
            ")",
            "col:x",
            "{body}: x",
            "'; DROP TABLE versions; --",
            "\x00",
            "🙂" * 2500,
            "",
            "   ",
            "undo",
            "go back to when",
        ]
    ),
    st.lists(
        st.sampled_from(["Lisbon", "AND", "(", '"', "*", "NEAR", "^", "-", "🙂", "undo"]),
        max_size=12,
    ).map(" ".join),
)


@pytest.fixture
def nasty_store(each_backend: str) -> ChronoMem:
    mem, _ = facts_store(HashEmbedder())
    yield mem
    mem.close()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=_NASTY)
def test_any_query_text_is_safe(nasty_store: ChronoMem, text: str) -> None:
    mem = nasty_store
    for fn in (mem.resolve_lexical, mem.resolve_dense, mem.resolve_hybrid, mem.resolve):
        out = fn(APP, USER, text, 3)
        assert all(isinstance(v, int) for v, _ in out)
    assert isinstance(mem.search(APP, USER, text, 3), list)
    assert mem.head(APP, USER) == 5


@settings(max_examples=25, deadline=None)
@given(text=_NASTY)
def test_nl_rollback_with_any_text_is_safe_or_clear(text: str) -> None:
    mem, _ = facts_store(HashEmbedder())
    before = mem.snapshot(APP, USER)
    try:
        res = mem.rollback_to_version_by_nl_query(APP, USER, text)
    except (EmptyScopeError, UncertainRequestError):
        assert mem.head(APP, USER) == 5 and mem.snapshot(APP, USER) == before  # nothing moved
        return
    assert res.head == mem.head(APP, USER) and 0.0 < res.confidence <= 1.0
    assert mem.check_integrity(APP, USER) == []


@settings(max_examples=25, deadline=None)
@given(text=_NASTY)
def test_selective_undo_with_any_text_is_safe_or_clear(text: str) -> None:
    mem, _ = facts_store(HashEmbedder())
    before = mem.snapshot(APP, USER)
    try:
        done = mem.selective_undo_by_nl_query(APP, USER, text, with_dependents="keep")
    except (EmptyScopeError, UncertainRequestError):
        assert mem.head(APP, USER) == 5 and mem.snapshot(APP, USER) == before  # nothing moved
        return
    assert done.new_head == mem.head(APP, USER) == 6 and 0.0 < done.confidence <= 1.0
    assert mem.check_integrity(APP, USER) == []
