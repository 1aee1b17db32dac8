"""Black-box checks of ChronoMem's store on SQLite and PostgreSQL, outside the test suite.

Why a script: the suite's store tests each check one property on a small case; this runs
the same properties through the public API only, at a size and with randomness a test
could not afford on every CI run, and several rounds in a row, printing a pass/fail
table. What each check does (one round):

- ``read_race``: 3 writer processes commit into one scope while this process reads
  (snapshot, search); no read may raise or score NaN, and each snapshot must equal
  the store's snapshot of the HEAD the read reported (``last_read_head``).
- ``id_contract``: ids of exactly ``MAX_ID_BYTES`` bytes round-trip; one byte more is a
  ValueError naming the argument, with nothing written.
- ``selective_model``: random commits and ``revert_commits`` calls against a reference
  model of selective undo (refuse mode); every HEAD and some older snapshots compared.
- ``sigkill_revert``: a child process loops commit + ``revert_commits``; it is killed
  with SIGKILL at random moments; the store must be intact and the interrupted revert
  applied wholly or not at all.
- ``writers``: 4 processes commit into one scope; no commit is lost.
- ``restart`` (PostgreSQL): the server is restarted (``-m immediate``, a crash) while a
  thread runs one write path in a loop (commit, revert_commits, rollback revert and
  truncate, redact, compact); the only error allowed is StoreConnectionError, and the
  store must be intact afterwards.
- ``redaction``: a secret written as an item, quoted by an update, by a selective
  forget's reason (``revert_commits(redact=True)``), by a plain-words forget that
  quotes it (``selective_undo_by_nl_query(redact=True)``) and in truncated history,
  then erased by text; the same grep must find it before, and no form of it (as
  written, lower-cased, stemmed) after, in the SQLite files (db, -wal, -shm) or in the
  PostgreSQL database's files and WAL (after :func:`chronomem.pg.wal.retire_wal`,
  ``wal_recycle=off`` set before the first write).

Usage::

    python scripts/store_blackbox.py --backend postgres sqlite --rounds 3

PostgreSQL runs on a throwaway cluster this script starts (and stops); exit status 0
when every check passed every round.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# This checkout first: a virtual environment's installed chronomem (a wheel) goes stale
# as the checkout is edited, and Python puts the script's folder on the path, not it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[1]
APP, USER = "bb", "ann"


def _add(item: str, text: str) -> dict[str, Any]:
    return {"op": "add", "item_id": item, "text": text}


def _update(item: str, text: str) -> dict[str, Any]:
    return {"op": "update", "item_id": item, "text": text}


class Place:
    """Where a check's store lives: a fresh SQLite file or a fresh PostgreSQL database."""

    def __init__(self, backend: str, tmp: Path, cluster: Any) -> None:
        self.backend, self.tmp, self.cluster = backend, tmp, cluster

    @contextlib.contextmanager
    def fresh(self) -> Iterator[str]:
        if self.backend == "sqlite":
            yield str(self.tmp / f"s{uuid.uuid4().hex[:10]}.db")
            return
        import psycopg

        name = f"bb_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.cluster.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        base, _, _ = self.cluster.url.rpartition("/")
        try:
            yield f"{base}/{name}"
        finally:
            with (
                contextlib.suppress(psycopg.Error),
                psycopg.connect(self.cluster.url, autocommit=True) as conn,
            ):
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _open(location: str) -> Any:
    from chronomem import ChronoMem, HashEmbedder

    return ChronoMem(location, embedder=HashEmbedder())


def _child(code: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, env=env
    )


# ---- read_race ------------------------------------------------------------------------------

_WRITER = """
import random, sys
from chronomem import ChronoMem, HashEmbedder
mem = ChronoMem(sys.argv[1], embedder=HashEmbedder())
tag, n = sys.argv[2], int(sys.argv[3])
rng = random.Random(tag)
for k in range(n):
    item = f"w{tag}_{rng.randrange(6)}"
    mem.commit("bb", "ann", [{"op": "add" if k < 6 else "update", "item_id": f"w{tag}_{k}"
               if k < 6 else item, "text": f"writer {tag} fact {k} about Ann"}],
               source="bb", reason="race")
print("done", flush=True)
"""


def check_read_race(place: Place, rng: random.Random) -> str:
    with place.fresh() as loc:
        mem = _open(loc)
        mem.commit(APP, USER, [_add("seed", "Ann lives in Oslo")], source="bb", reason="r")
        kids = [_child(_WRITER, loc, str(t), "60") for t in range(3)]
        seen: list[tuple[int, dict[str, str]]] = []
        errors: list[str] = []
        reads = 0
        while any(k.poll() is None for k in kids):
            try:
                snap = mem.snapshot(APP, USER)
                seen.append((int(mem.last_read_head), snap))
                hits = mem.search(APP, USER, rng.choice(["Ann fact", "writer", "Oslo"]), 5)
                reads += 2
                if any(not math.isfinite(h.score) for h in hits):
                    errors.append("a search scored NaN or inf")
            except Exception as exc:  # noqa: BLE001 - any error here is the finding
                errors.append(f"{type(exc).__name__}: {exc}")
        bad = [k.returncode for k in kids if k.returncode != 0]
        wrong = sum(1 for h, snap in seen if mem.snapshot(APP, USER, h) != snap)
        problems = mem.check_integrity(APP, USER)
        mem.close()
    assert not bad, f"writer exit codes {bad}"
    assert not errors, f"{len(errors)} read errors, first: {errors[0]}"
    assert wrong == 0, f"{wrong} of {len(seen)} snapshots differ from their HEAD's"
    assert not problems, f"integrity: {problems[:3]}"
    return f"{reads} reads, 0 errors, {len(seen)} snapshots match their HEAD"


# ---- id_contract ----------------------------------------------------------------------------


def check_id_contract(place: Place, rng: random.Random) -> str:
    from chronomem.validate import MAX_ID_BYTES

    with place.fresh() as loc:
        mem = _open(loc)
        item = "é" * (MAX_ID_BYTES // 2)  # two bytes each in UTF-8: exactly the limit
        app = "a" * MAX_ID_BYTES
        vid = mem.commit(app, USER, [_add(item, "long id")], source="bb", reason="r")
        assert mem.snapshot(app, USER, vid) == {item: "long id"}, "a limit-size id lost"
        failures = 0
        for name, call in (
            ("item_id", lambda: mem.commit(APP, USER, [_add(item + "x", "t")], source="s", reason="r")),
            ("app", lambda: mem.commit(app + "x", USER, [_add("i", "t")], source="s", reason="r")),
            ("user", lambda: mem.commit(APP, "u" * (MAX_ID_BYTES + 1), [_add("i", "t")], source="s", reason="r")),
        ):  # fmt: skip
            try:
                call()
            except ValueError as exc:
                assert name in str(exc), f"the error for a long {name} does not name it: {exc}"
                failures += 1
        assert failures == 3, "an id over the limit was accepted"
        assert mem.scopes() == [(app, USER)], f"a refused write created a scope: {mem.scopes()}"
        mem.close()
    return f"{MAX_ID_BYTES}-byte ids stored; 3 over the limit refused, naming the argument"


# ---- selective_model ------------------------------------------------------------------------


def check_selective_model(place: Place, rng: random.Random, calls: int = 240) -> str:
    from chronomem import DependentChangesError

    with place.fresh() as loc:
        mem = _open(loc)
        state: dict[str, str] = {}
        # per version: {item: (before, after)}; history of snapshots for older reads
        changes: dict[int, dict[str, tuple[str | None, str | None]]] = {}
        snaps: dict[int, dict[str, str]] = {0: {}}
        counter = 0
        refused = reverted = 0
        for _ in range(calls):
            if not changes or rng.random() < 0.6:
                counter += 1
                item = f"i{rng.randrange(6)}"
                if item not in state:
                    op, new = _add(item, f"fact {counter} of {item}"), f"fact {counter} of {item}"
                elif rng.random() < 0.25:
                    op, new = {"op": "delete", "item_id": item}, None
                else:
                    op, new = (
                        _update(item, f"fact {counter} of {item}"),
                        f"fact {counter} of {item}",
                    )
                vid = mem.commit(APP, USER, [op], source="bb", reason="model")
                changes[vid] = {item: (state.get(item), new)}
                if new is None:
                    del state[item]
                else:
                    state[item] = new
            else:
                # recent commits half the time: older ones mostly conflict (refused)
                pool = sorted(changes)[-4:] if rng.random() < 0.5 else sorted(changes)
                chosen = sorted(rng.sample(pool, min(len(pool), rng.choice([1, 1, 2]))))
                later = {
                    i for c in chosen for i in changes[c]
                    if any(d > c and d not in chosen and i in changes[d] for d in changes)
                }  # fmt: skip
                head = mem.head(APP, USER)
                try:
                    plan = mem.revert_commits(APP, USER, chosen, expected_head=head)
                except DependentChangesError:
                    assert later, f"revert of {chosen} refused without a later change"
                    assert mem.head(APP, USER) == head, "a refused revert wrote"
                    refused += 1
                    continue
                assert not later, f"revert of {chosen} applied over later changes to {later}"
                new_state = dict(state)
                touched: dict[str, tuple[str | None, str | None]] = {}
                for c in sorted(chosen, reverse=True):  # the earliest commit's text wins
                    for i, (before, _) in changes[c].items():
                        touched[i] = (state.get(i), before)
                for i, (_, before) in touched.items():
                    if before is None:
                        new_state.pop(i, None)
                    else:
                        new_state[i] = before
                state, vid = new_state, int(plan.new_head)
                changes[vid] = {i: t for i, t in touched.items() if t[0] != t[1]}
                reverted += 1
            snaps[vid] = dict(state)
            got = mem.snapshot(APP, USER)
            assert got == state, f"after v{vid}: store {got} != model {state}"
            old = rng.choice(sorted(snaps))
            assert mem.snapshot(APP, USER, old) == snaps[old], f"snapshot of v{old} differs"
        problems = mem.check_integrity(APP, USER)
        mem.close()
    assert not problems, f"integrity: {problems[:3]}"
    return f"{calls} calls ({reverted} reverts, {refused} refused) match the model"


# ---- sigkill_revert -------------------------------------------------------------------------

_LOOPER = """
import random, sys
from chronomem import ChronoMem, HashEmbedder, DependentChangesError
mem = ChronoMem(sys.argv[1], embedder=HashEmbedder())
rng = random.Random(int(sys.argv[2]))
print("ready", flush=True)
k = 0
while True:
    k += 1
    item = f"k{rng.randrange(8)}"
    op = "update" if item in mem.snapshot("bb", "ann") else "add"
    mem.commit("bb", "ann", [{"op": op, "item_id": item, "text": f"text {sys.argv[2]}.{k}"}],
               source="bb", reason="loop")
    vids = [v.version_id for v in mem.versions("bb", "ann") if v.seq > 0]
    target = rng.choice(vids)
    print(f"start {mem.head('bb', 'ann')} {target}", flush=True)
    try:
        mem.revert_commits("bb", "ann", [target])
    except DependentChangesError:
        pass
    print("done", flush=True)
"""


def _expected_revert(mem: Any, head: int, target: int) -> dict[str, str]:
    """S(head) with the items that commit ``target`` changed given their text before it."""
    parent = next(v.parent for v in mem.versions(APP, USER) if v.version_id == target)
    before, after = mem.snapshot(APP, USER, parent), mem.snapshot(APP, USER, target)
    state = mem.snapshot(APP, USER, head)
    for item in set(before) | set(after):
        if before.get(item) != after.get(item):
            if item in before:
                state[item] = before[item]
            else:
                state.pop(item, None)
    return state


def check_sigkill_revert(place: Place, rng: random.Random, kills: int = 14) -> str:
    mid = applied = 0
    with place.fresh() as loc:
        _open(loc).close()
        for n in range(kills):
            kid = _child(_LOOPER, loc, str(rng.randrange(10**6)))
            assert kid.stdout is not None
            assert kid.stdout.readline().strip() == "ready", "the child did not start"
            # aim at revert_commits: kill a few ms after the n-th "start" line
            starts, last = rng.randint(1, 4), ""
            while starts:
                last = kid.stdout.readline().strip()
                assert last, f"the child ended early (exit {kid.wait()})"
                starts -= last.startswith("start")
            # mostly inside the revert, sometimes just after its commit
            time.sleep(rng.uniform(0.0, 0.008) if rng.random() < 0.7 else rng.uniform(0.01, 0.05))
            kid.send_signal(signal.SIGKILL)
            out, _ = kid.communicate()
            tail = out.strip().splitlines()
            last = tail[-1] if tail else last
            mem = _open(loc)
            problems = mem.check_integrity(APP, USER)
            assert not problems, f"kill {n}: integrity {problems[:3]}"
            if last.startswith("start"):
                mid += 1
                _, head, target = last.split()
                now = mem.head(APP, USER)
                if now != int(head):
                    applied += 1
                    want = _expected_revert(mem, int(head), int(target))
                    got = mem.snapshot(APP, USER)
                    assert got == want, f"kill {n}: a half-applied revert: {got} != {want}"
            mem.close()
    return f"{kills} SIGKILLs ({mid} inside revert_commits, {applied} of those applied), intact"


# ---- writers --------------------------------------------------------------------------------


def check_writers(place: Place, rng: random.Random, procs: int = 4, each: int = 40) -> str:
    with place.fresh() as loc:
        _open(loc).close()
        kids = [_child(_WRITER, loc, f"p{t}", str(each)) for t in range(procs)]
        codes = [k.wait() for k in kids]
        mem = _open(loc)
        n = sum(1 for v in mem.versions(APP, USER) if v.seq > 0)
        problems = mem.check_integrity(APP, USER)
        mem.close()
    assert codes == [0] * procs, f"writer exit codes {codes}"
    assert n == procs * each, f"{n} versions for {procs * each} commits"
    assert not problems, f"integrity: {problems[:3]}"
    return f"{procs} processes x {each} commits: all {n} kept"


# ---- restart (PostgreSQL) -------------------------------------------------------------------


def _paths() -> dict[str, Callable[[Any, int], None]]:
    def commit(mem: Any, k: int) -> None:
        mem.commit(APP, USER, [_update(f"i{k % 5}", f"text {k}")], source="bb", reason="r")

    def revert(mem: Any, k: int) -> None:
        commit(mem, k)
        mem.revert_commits(APP, USER, [mem.head(APP, USER)])

    def rollback(mode: str) -> Callable[[Any, int], None]:
        def run(mem: Any, k: int) -> None:
            commit(mem, k)
            commit(mem, k + 1)
            mem.rollback_to_version(APP, USER, mem.head(APP, USER) - 1, mode=mode)

        return run

    def redact(mem: Any, k: int) -> None:
        mem.commit(APP, USER, [_add(f"s{k}", f"secret {k}")], source="bb", reason="r")
        mem.redact(APP, USER, f"s{k}", by="id", reason="erase")

    def compact(mem: Any, k: int) -> None:
        rollback("truncate")(mem, k)
        mem.compact(APP, USER)

    return {
        "commit": commit, "revert_commits": revert, "rollback revert": rollback("revert"),
        "rollback truncate": rollback("truncate"), "redact": redact, "compact": compact,
    }  # fmt: skip


def check_restart(place: Place, rng: random.Random) -> str:
    from chronomem import StoreConnectionError

    broke: list[str] = []
    for name, step in _paths().items():
        with place.fresh() as loc:
            mem = _open(loc)
            for i in range(5):
                mem.commit(APP, USER, [_add(f"i{i}", f"text {i}")], source="bb", reason="r")
            stop = threading.Event()
            seen: list[BaseException] = []

            def loop(
                mem: Any = mem, step: Callable = step, stop: Any = stop, seen: list = seen
            ) -> None:
                k = 10
                while not stop.is_set():
                    try:
                        step(mem, k)
                    except BaseException as exc:  # noqa: BLE001 - classified below
                        seen.append(exc)
                        return
                    k += 2

            worker = threading.Thread(target=loop)
            worker.start()
            time.sleep(rng.uniform(0.1, 0.6))
            place.cluster.restart("immediate")
            stop.set()
            worker.join(60)
            assert not worker.is_alive(), f"{name}: the writer hangs after a restart"
            raw = [e for e in seen if not isinstance(e, StoreConnectionError)]
            if raw:
                detail = "".join(traceback.format_exception(raw[0]))[-600:]
                raise AssertionError(f"{name}: {type(raw[0]).__name__} escaped:\n{detail}")
            if seen:
                broke.append(name)
            with contextlib.suppress(Exception):
                mem.close()
            fresh = _open(loc)
            problems = fresh.check_integrity(APP, USER)
            fresh.close()
            assert not problems, f"{name}: integrity after the restart {problems[:3]}"
    return f"6 paths restarted mid-loop, {len(broke)} broke as StoreConnectionError, intact"


# ---- redaction ------------------------------------------------------------------------------

SECRET = "Zq7xDoorCode"


def _forms() -> set[bytes]:
    from chronomem.fts5_tokenizer import tokenizer

    stems = {t for toks in tokenizer().tokens([SECRET]) for t in toks}
    return {f.encode() for f in {SECRET, SECRET.lower(), *stems}}


def _grep(files: list[Path]) -> list[str]:
    forms = _forms()
    found = []
    for p in files:
        with contextlib.suppress(FileNotFoundError):
            data = p.read_bytes()
            found += [f"{p.name}:{f.decode()}" for f in forms if f in data]
    return found


def check_redaction(place: Place, rng: random.Random) -> str:
    with place.fresh() as loc:
        mem = _open(loc)
        c = lambda ops, why="r": mem.commit(APP, USER, ops, source="bb", reason=why)  # noqa: E731
        c([_add("door", f"my door code is {SECRET}")])
        c([_add("note", "buy milk")])
        quoted = c([_update("note", f"remember {SECRET} for the door")])
        c([_add("pet", "Ann has a dog")])
        # a selective forget whose request quotes the secret
        mem.revert_commits(APP, USER, [quoted], redact=True, reason=f"forget {SECRET} please")
        # the plain-words path: a request that quotes the secret, with redact
        c([_add("gate", f"the gate code is {SECRET}")])
        plan = mem.selective_undo_by_nl_query(
            APP, USER, f"forget the gate code {SECRET}", redact=True
        )
        assert plan.removed == ["gate"], f"the NL forget removed {plan.removed}"
        # the secret in history a truncate hides
        base = mem.head(APP, USER)
        c([_add("tmp", f"temporary {SECRET} copy")])
        mem.rollback_to_version(APP, USER, base, mode="truncate")
        # the control: before the redaction the same grep finds the secret
        before = _sqlite_leaks(loc) if place.backend == "sqlite" else _pg_leaks(loc)[0]
        assert before, "the grep finds no secret even before the redaction"
        report = mem.redact(APP, USER, SECRET, by="text", reason="erase the door code")
        state = mem.snapshot(APP, USER)
        assert "door" not in state and "pet" in state, f"unexpected state {state}"
        if place.backend == "sqlite":
            mem.close()
            leaks, where = _sqlite_leaks(loc), "db, -wal, -shm"
        else:
            leaks, where = _pg_leaks(loc)
            mem.close()
    assert not leaks, f"secret left in {leaks[:6]}"
    return (
        f"{len(report['items'])} items erased by text; {len(before)} copies found before, "
        f"none after in {where}"
    )


def _sqlite_leaks(loc: str) -> list[str]:
    return _grep([Path(loc), Path(f"{loc}-wal"), Path(f"{loc}-shm")])


def _pg_leaks(loc: str) -> tuple[list[str], str]:
    import psycopg

    from chronomem.pg.wal import retire_wal

    # the cluster's superuser owns the database: CHECKPOINT and pg_switch_wal are allowed
    with psycopg.connect(loc, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        retired = retire_wal(conn)
        datadir = Path(conn.execute("SHOW data_directory").fetchone()[0])
        dboid = conn.execute(
            "SELECT oid FROM pg_database WHERE datname = %s", (loc.rpartition("/")[2],)
        ).fetchone()[0]
    files = sorted((datadir / "base" / str(dboid)).iterdir()) + sorted(
        (datadir / "pg_wal").glob("0*")
    )
    assert retired["deleted_not_recycled"], "wal_recycle is on: retired WAL keeps its bytes"
    return _grep(files), f"{len(files)} database and WAL files"


# ---- the runner -----------------------------------------------------------------------------

CHECKS: dict[str, Callable[[Place, random.Random], str]] = {
    "read_race": check_read_race,
    "id_contract": check_id_contract,
    "selective_model": check_selective_model,
    "sigkill_revert": check_sigkill_revert,
    "writers": check_writers,
    "restart": check_restart,
    "redaction": check_redaction,
}
PG_ONLY = {"restart"}


def _start_cluster() -> Any:
    import psycopg

    from chronomem.pg.cluster import Cluster

    cluster = Cluster().start()  # its own folder: initdb may run as another user
    # retired WAL must be deleted, not renamed for reuse, before the first secret is
    # written (see chronomem.pg.wal): set for the whole cluster, then reloaded
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET wal_recycle = off")
        conn.execute("SELECT pg_reload_conf()")
    return cluster


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--backend", nargs="+", choices=["sqlite", "postgres"], default=["sqlite", "postgres"]
    )
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every check (default 3)")
    ap.add_argument("--checks", nargs="+", choices=sorted(CHECKS), default=list(CHECKS))
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    print(f"# store black-box checks, seed {seed}, {args.rounds} rounds, load "
          f"{os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    rows: list[tuple[str, str, int, str, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="cm-blackbox-") as td:
        for backend in args.backend:
            cluster = _start_cluster() if backend == "postgres" else None
            place = Place(backend, Path(td), cluster)
            try:
                for name in args.checks:
                    if name in PG_ONLY and backend != "postgres":
                        continue
                    for r in range(1, args.rounds + 1):
                        rng = random.Random(f"{seed}/{backend}/{name}/{r}")
                        t0 = time.perf_counter()
                        try:
                            detail, verdict = CHECKS[name](place, rng), "pass"
                        except Exception as exc:  # noqa: BLE001 - reported in the table
                            detail, verdict = f"{type(exc).__name__}: {exc}", "FAIL"
                        took = time.perf_counter() - t0
                        rows.append((backend, name, r, verdict, took, detail))
                        print(f"{backend:8} {name:15} {r} {verdict:4} {took:6.1f}s  "
                              f"{detail.splitlines()[0][:110]}", flush=True)  # fmt: skip
            finally:
                if cluster is not None:
                    cluster.stop()
    print("\n| backend | check | rounds passed | seconds (max) | last detail |")
    print("|---|---|---:|---:|---|")
    for backend in args.backend:
        for name in args.checks:
            mine = [r for r in rows if r[0] == backend and r[1] == name]
            if mine:
                ok = sum(1 for r in mine if r[3] == "pass")
                last = next((r for r in mine if r[3] != "pass"), mine[-1])[5].splitlines()[0]
                print(f"| {backend} | {name} | {ok}/{len(mine)} | {max(r[4] for r in mine):.1f} "
                      f"| {last[:100]} |")  # fmt: skip
    failed = [r for r in rows if r[3] != "pass"]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
