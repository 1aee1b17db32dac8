"""ChronoMem on a PostgreSQL server: many writer processes over TCP, crashes, restarts,
lock isolation between scopes and reconnects (redaction: test_memory_pg_redaction).

The store suite itself (model state machine, bad input, scope isolation, hostile text,
stale answers) runs on both backends through the ``store_location`` fixtures; these
tests are the server-only ones.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chronomem import ChronoMem, HashEmbedder
from tests._memory_fixtures import APP, USER, add

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=ROOT,
    )


def _store(url: str, **kw) -> ChronoMem:
    return ChronoMem(url, embedder=HashEmbedder(), **kw)


def _all_version_ids(url: str, user: str) -> list[int]:
    """Every version row of the scope, discarded history included (raw SQL)."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT v.version_id FROM chronomem.versions v JOIN chronomem.scopes s ON "
            's.scope_id = v.scope_id WHERE s.app = %s AND s."user" = %s AND v.seq > 0',
            (APP, user),
        ).fetchall()
    return [int(r[0]) for r in rows]


# ---- backend selection ---------------------------------------------------------------------


def test_a_url_selects_postgres_and_a_path_keeps_sqlite(pg_url: str, tmp_path: Path) -> None:
    with _store(pg_url) as mem:
        assert type(mem.backend).__name__ == "PostgresBackend"
        v = mem.commit(APP, USER, [add("city", "Ann lives in Oslo")], source="s", reason="r")
        assert mem.snapshot(APP, USER, v) == {"city": "Ann lives in Oslo"}
    with _store(str(tmp_path / "x.db")) as mem:
        assert type(mem.backend).__name__ == "SQLiteBackend"


def test_unreachable_server_is_a_clear_error() -> None:
    from chronomem import StoreConnectionError

    with pytest.raises(StoreConnectionError, match=r"127\.0\.0\.1:1/nowhere"):
        _store("postgresql://nobody@127.0.0.1:1/nowhere")


# ---- locks: one scope's writers queue, other scopes never wait -------------------------------


def test_a_held_scope_lock_blocks_only_that_scope(pg_url: str) -> None:
    import psycopg

    from chronomem import StoreBusyError

    with _store(pg_url, busy_timeout_ms=300) as mem:
        mem.commit(APP, USER, [add("a", "Ann fact")], source="s", reason="r")
        mem.commit(APP, "bob", [add("b", "Bob fact")], source="s", reason="r")
        with psycopg.connect(pg_url) as other:  # another process's open write transaction
            other.execute(
                'SELECT 1 FROM chronomem.scopes WHERE app = %s AND "user" = %s FOR UPDATE',
                (APP, USER),
            )
            # bob's scope is not locked: its commit goes through at once.
            v = mem.commit(APP, "bob", [add("b2", "Bob again")], source="s", reason="r")
            assert mem.head(APP, "bob") == v
            with pytest.raises(StoreBusyError, match="busy_timeout_ms"):
                mem.commit(APP, USER, [add("a2", "Ann again")], source="s", reason="r")
            with pytest.raises(StoreBusyError):
                mem.rollback_to_version(APP, USER, 0)
            assert mem.snapshot(APP, USER) == {"a": "Ann fact"}  # readers never wait
        # lock released: the scope takes writes again, nothing half-done was left behind
        mem.commit(APP, USER, [add("a2", "Ann again")], source="s", reason="r")
        assert mem.check_integrity(APP, USER) == [] and mem.check_integrity(APP, "bob") == []


def test_a_killed_connection_is_a_clear_error_and_the_store_reconnects(pg_url: str) -> None:
    import psycopg

    from chronomem import StoreConnectionError

    with _store(pg_url) as mem:
        mem.commit(APP, USER, [add("a", "Ann fact")], source="s", reason="r")
        pid = mem.backend.conn.raw.info.backend_pid
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StoreConnectionError, match="reconnects"):
            mem.commit(APP, USER, [add("b", "Ann more")], source="s", reason="r")
        # next call: a fresh connection; the failed commit left nothing behind
        assert mem.snapshot(APP, USER) == {"a": "Ann fact"}
        mem.commit(APP, USER, [add("b", "Ann more")], source="s", reason="r")
        assert len(mem.versions(APP, USER)) == 3 and mem.check_integrity(APP, USER) == []


def test_clone_is_an_independent_temporary_schema(pg_url: str) -> None:
    import psycopg

    with _store(pg_url) as mem:
        v1 = mem.commit(APP, USER, [add("a", "Ann fact")], source="s", reason="r")
        mem.commit(APP, USER, [add("b", "Ann more")], source="s", reason="r")
        copy = mem.clone()
        copy.rollback_to_version(APP, USER, v1)
        copy.commit(APP, USER, [add("c", "only in the copy")], source="s", reason="r")
        assert set(copy.snapshot(APP, USER)) == {"a", "c"}
        assert set(mem.snapshot(APP, USER)) == {"a", "b"}
        assert copy.check_integrity(APP, USER) == [] and mem.check_integrity(APP, USER) == []
        schema = copy.backend.schema
        copy.close()
    with psycopg.connect(pg_url) as conn:
        left = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    assert left is None


class _SharedHash(HashEmbedder):
    """The hash embedder, its vectors shared through the server as a model's are."""

    share_through_server = True
    model_id = "hash-shared:64"


def test_embeddings_are_shared_through_the_server(pg_url: str) -> None:
    from chronomem.embedders import shared_cache

    with ChronoMem(pg_url, embedder=HashEmbedder()) as mem:
        # a vector it computes faster than the server answers: never asked for
        assert shared_cache(mem.embedder).persistent is None
    emb = _SharedHash()
    with ChronoMem(pg_url, embedder=emb) as mem:
        mem.commit(APP, USER, [add("a", "Ann keeps bees in Oslo")], source="s", reason="r")
        mem.search(APP, USER, "bees", 3)  # embeds the item text once
        cache = shared_cache(emb)
        assert cache.persistent.count() >= 2  # descriptor window + item + query
        cache._vecs.clear()  # a fresh process: nothing in memory
        before = dict(cache.stats)
        mem.search(APP, USER, "bees", 3)
        assert cache.stats["embedded"] == before["embedded"]  # read back, not recomputed
        assert cache.stats["disk_hits"] > before["disk_hits"]
    assert shared_cache(emb).persistent is None  # detached with the store


# ---- many writer processes over TCP ----------------------------------------------------------

_WRITER = """
import sys
from chronomem import ChronoMem, HashEmbedder
url, user, tag, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
mem = ChronoMem(url, embedder=HashEmbedder())
print("ready", flush=True)
for i in range(n):
    vid = mem.commit("app", user, [{"op": "add", "item_id": f"{tag}-{i % 7}",
                     "text": f"{tag} fact {i}"}], source=tag, reason="race")
    print(vid, flush=True)
"""

_ROLLBACKS = """
import random, sys
from chronomem import ChronoMem, HashEmbedder
url, n = sys.argv[1], int(sys.argv[2])
mem = ChronoMem(url, embedder=HashEmbedder())
rng = random.Random(3)
print("ready", flush=True)
for i in range(n):
    ids = [v.version_id for v in mem.versions("app", "ann")]
    mode = "truncate" if i % 2 else "revert"
    head = mem.rollback_to_version("app", "ann", rng.choice(ids[len(ids) // 2:]), mode=mode)
    print(mode, head, flush=True)
"""

_CHECKER = """
import sys, os
from chronomem import ChronoMem, HashEmbedder
url, stop = sys.argv[1], sys.argv[2]
mem = ChronoMem(url, embedder=HashEmbedder())
print("ready", flush=True)
checks = 0
while not os.path.exists(stop):
    for user in ("ann", "s0"):
        for p in mem.check_integrity("app", user):
            print("problem", user, p, flush=True)
        checks += 1
print("checks", checks, flush=True)
"""


@pytest.mark.slow
def test_writer_processes_rollbacks_and_an_integrity_reader(pg_url: str, tmp_path: Path) -> None:
    with _store(pg_url) as mem:
        for user in ("ann", "s0", "s1", "s2"):
            mem.commit(APP, user, [add("seed", f"seed of {user}")], source="s", reason="r")
    n = 20
    stop = tmp_path / "stop"
    checker = _spawn(_CHECKER, pg_url, str(stop))
    shared = [_spawn(_WRITER, pg_url, "ann", f"p{i}", str(n)) for i in range(6)]
    others = [_spawn(_WRITER, pg_url, f"s{i}", f"q{i}", str(n)) for i in range(3)]
    racer = _spawn(_ROLLBACKS, pg_url, "8")
    procs = [*shared, *others, racer]
    outs = [p.communicate(timeout=300) for p in procs]
    stop.write_text("done")
    checker_out, checker_err = checker.communicate(timeout=120)
    for p, (_, err) in zip([*procs, checker], [*outs, (None, checker_err)], strict=True):
        assert p.returncode == 0, err
    lines = [out.split()[1:] for out, _ in outs]  # drop "ready"
    acked_shared = [int(x) for ln in lines[:6] for x in ln]
    rollback_heads = [int(x) for x in lines[-1][1::2]]
    # no lost or duplicated version: every acknowledged id is a row, and ids never repeat
    assert len(acked_shared) == len(set(acked_shared)) == 6 * n
    rows = _all_version_ids(pg_url, "ann")
    assert len(rows) == len(set(rows))
    assert set(acked_shared) <= set(rows)
    assert len(rows) == 1 + 6 * n + sum(1 for ln in lines[-1][0::2] if ln == "revert")
    assert rollback_heads
    # the other scopes: exactly their writer's versions, in its order
    with _store(pg_url) as mem:
        for i, (out, _) in enumerate(outs[6:9]):
            acked = [int(x) for x in out.split()[1:]]
            hist = [v.version_id for v in mem.versions(APP, f"s{i}")]
            assert hist[2:] == acked and len(mem.snapshot(APP, f"s{i}")) == 1 + 7
        for user in ("ann", "s0", "s1", "s2"):
            assert mem.check_integrity(APP, user) == []
    assert "problem" not in checker_out, checker_out
    assert int(checker_out.split()[-1]) >= 4, "the integrity reader did not overlap the writers"


# ---- crashes ---------------------------------------------------------------------------------

_LOOP = """
import sys, time
from chronomem import ChronoMem, HashEmbedder, StoreConnectionError
url, n = sys.argv[1], int(sys.argv[2])
mem = ChronoMem(url, embedder=HashEmbedder())
print("ready", flush=True)
i = errors = 0
# Past n, go on writing until the restart has been seen: a fast machine could otherwise
# finish all n writes before the server goes down (a flake). The deadline ends a loop
# the restart never reaches, and the test says so.
deadline = time.monotonic() + 120
while i < n or (errors == 0 and time.monotonic() < deadline):
    try:
        print("start", i, flush=True)
        vid = mem.commit("app", "ann", [{"op": "add", "item_id": f"i{i}", "text": f"fact {i}"}],
                         source="loop", reason="restart")
        print("acked", i, vid, flush=True)
        i += 1
    except StoreConnectionError as exc:
        errors += 1
        print("error", " ".join(str(exc).split()), flush=True)  # one line, whatever libpq says
        while True:  # the outcome of the interrupted commit: on HEAD, or not at all
            time.sleep(0.3)
            try:
                snap = mem.snapshot("app", "ann")
                break
            except StoreConnectionError:
                errors += 1
        if snap.get(f"i{i}") == f"fact {i}":
            print("applied", i, flush=True)
            i += 1
print("errors", errors, flush=True)
print("count", i, flush=True)
"""


@pytest.mark.slow
def test_server_crash_restart_during_a_write_loop(pg_cluster, tmp_path: Path) -> None:
    from tests.pg_server import fresh_database

    with fresh_database(pg_cluster.url) as url:
        _store(url).close()
        proc = _spawn(_LOOP, url, "60")
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        acked: dict[int, int] = {}
        while len(acked) < 15:
            parts = proc.stdout.readline().split()
            if parts and parts[0] == "acked":
                acked[int(parts[1])] = int(parts[2])
        pg_cluster.restart("immediate")  # a crash: no shutdown checkpoint, WAL replay
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        lines = [ln.split(" ", 1) for ln in out.splitlines()]
        for ln in out.splitlines():
            parts = ln.split()
            if parts[0] == "acked":
                acked[int(parts[1])] = int(parts[2])
        errors = [rest for kind, *rest in lines if kind == "error"]
        assert errors, "the restart did not interrupt the loop"
        assert all(
            "lost the connection to PostgreSQL" in e[0] or "cannot connect to PostgreSQL" in e[0]
            for e in errors
        ), errors
        with _store(url) as mem:
            assert mem.check_integrity(APP, USER) == []
            snap = mem.snapshot(APP, USER)
            hist = {v.version_id for v in mem.versions(APP, USER)}
        count = int(next(rest[0] for kind, *rest in lines if kind == "count"))
        assert count >= 60
        assert set(acked.values()) <= hist  # every acknowledged write survived the crash
        assert snap == {f"i{i}": f"fact {i}" for i in range(count)}  # once each, none partial
        assert len(hist) == count + 1


_KILL_CHILD = """
import random, sys
from chronomem import ChronoMem, HashEmbedder
mem = ChronoMem(sys.argv[1], embedder=HashEmbedder())
rng = random.Random(int(sys.argv[2]))
print("done", mem.head("app", "ann"), flush=True)
while True:
    ids = [v.version_id for v in mem.versions("app", "ann")]
    r = rng.random()
    if r < 0.6 or len(ids) < 3:
        print("start commit", flush=True)
        ops = [{"op": "add", "item_id": f"i{rng.randrange(40)}", "text": f"fact {rng.random()}"}
               for _ in range(rng.randrange(1, 4))]
        head = mem.commit("app", "ann", ops, source="crash", reason="test")
    else:
        target = rng.choice(ids[:-1])
        mode = "truncate" if r < 0.8 else "revert"
        print("start", mode, target, flush=True)
        head = mem.rollback_to_version("app", "ann", target, mode=mode)
    print("done", head, flush=True)
"""


@pytest.mark.slow
def test_sigkill_of_several_writers_mid_commit_and_mid_rollback(pg_url: str) -> None:
    """Three processes on one scope, killed at random moments, round after round."""
    _store(pg_url).close()
    rng = random.Random(11)
    for round_ in range(4):
        procs = [_spawn(_KILL_CHILD, pg_url, str(10 * round_ + i)) for i in range(3)]
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().startswith("done")
        time.sleep(rng.uniform(0.3, 0.8))
        for p in procs:
            p.send_signal(signal.SIGKILL)
        for p in procs:
            p.wait()
        with _store(pg_url) as mem:
            # the killed sessions' transactions were rolled back by the server: no partial
            # version, no half-applied rollback, and a writer can go on at once
            assert mem.check_integrity(APP, USER) == []
            mem.commit(APP, USER, [add("after", f"round {round_}")], source="s", reason="r")
            assert mem.check_integrity(APP, USER) == []
