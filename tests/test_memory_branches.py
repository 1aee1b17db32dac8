"""Branches: fork, checkout, diff, three-way merge, delete, keep_as; on both backends."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from chronomem import MergeConflictError, UnknownBranchError, UnknownVersionError
from chronomem.branching import BLOCK
from tests._memory_fixtures import APP, USER, hash_store, shared_location

pytestmark = pytest.mark.usefixtures("each_backend")
ROOT = Path(__file__).resolve().parents[1]


def put(mem: Any, item: str, text: str | None) -> int:
    op = {"op": "delete", "item_id": item} if text is None else {
        "op": "update", "item_id": item, "text": text}  # fmt: skip
    return mem.commit(APP, USER, [op], source="user", reason="test")


def story(mem: Any) -> list[int]:
    """home, job, pet; then the move (what "before the move" names)."""
    vids = [put(mem, "home", "I live in Paris"), put(mem, "job", "I work at a bakery")]
    vids.append(put(mem, "pet", "I have a cat named Tom"))
    vids.append(put(mem, "home", "We talked about the move: I live in Rome now"))
    return vids


def test_session_branch_write_diff_merge_with_one_conflict() -> None:
    with hash_store() as mem:
        v = story(mem)
        made = mem.branch(APP, USER, "before-move", at="before we talked about the move")
        assert made["head"] == v[2] and made["plan"].target_version == v[2]
        assert mem.checkout(APP, USER, "before-move") == {"name": "before-move", "head": v[2]}
        assert mem.snapshot(APP, USER)["home"] == "I live in Paris"
        b1 = put(mem, "job", "I work at a library")
        put(mem, "pet", "I have a dog named Rex")
        assert b1 == BLOCK + 1  # the branch's own id block: unique in the scope
        mem.checkout(APP, USER, "main")
        put(mem, "pet", "I have two cats")
        d = mem.diff(APP, USER, "main", "before-move")
        assert set(d["changed"]) == {"home", "job", "pet"} and not d["added"]
        with pytest.raises(MergeConflictError) as info:
            mem.merge(APP, USER, "before-move")
        assert [c["item"] for c in info.value.conflicts] == ["pet"]
        assert mem.head(APP, USER) == v[3] + 1  # nothing was written
        done = mem.merge(
            APP, USER, "before-move", resolutions={"pet": {"text": "I have a cat and a dog"}}
        )
        assert mem.snapshot(APP, USER) == {
            "home": "We talked about the move: I live in Rome now",  # changed on main only
            "job": "I work at a library",  # changed on the branch only
            "pet": "I have a cat and a dog",  # both: the caller's text
        }
        last = mem.versions(APP, USER)[-1]
        assert (last.version_id, last.op, last.parent) == (done["version"], "merge", v[3] + 1)
        assert last.labels["merged_from"] == "before-move"
        assert last.labels["merge_parent"] == BLOCK + 2  # the second parent
        assert mem.check_integrity(APP, USER) == []


def test_branch_history_records_fork_and_rollback_stays_on_its_branch() -> None:
    with hash_store() as mem:
        v = story(mem)
        mem.branch(APP, USER, "side", at=v[1])
        mem.checkout(APP, USER, "side")
        hist = mem.versions(APP, USER)
        assert [(h.version_id, h.op) for h in hist] == [(0, "root"), (v[1], "branch")]
        b = [put(mem, "job", "I work at a zoo"), put(mem, "pet", "I have a parrot")]
        mem.rollback_to_version(APP, USER, b[0])
        assert mem.head(APP, USER) == b[0]
        plan = mem.revert_commits(APP, USER, [b[0]])
        assert mem.snapshot(APP, USER) == {"home": "I live in Paris", "job": "I work at a bakery"}
        assert plan.new_head == BLOCK + 3
        mem.checkout(APP, USER, "main")
        assert [h.version_id for h in mem.versions(APP, USER)] == [0, *v]
        assert mem.snapshot(APP, USER)["pet"] == "I have a cat named Tom"
        assert mem.check_integrity(APP, USER) == []


def test_rollback_keep_as_keeps_what_came_after() -> None:
    with hash_store() as mem:
        v = story(mem)
        result = mem.rollback_to_version_by_nl_query(
            APP, USER, "undo what we said about the move", keep_as="after-move"
        )
        assert result.target_version == v[2] and mem.head(APP, USER) == v[2]
        kept = {b["name"]: b for b in mem.branches(APP, USER)}["after-move"]
        assert (kept["head"], kept["at"], kept["from"]) == (v[3], v[3], "main")
        assert mem.diff(APP, USER, "main", "after-move")["changed"]["home"]["after"].endswith(
            "Rome now"
        )
        with pytest.raises(ValueError, match="already exists"):  # nothing rolled back either
            mem.rollback_to_version(APP, USER, v[0], keep_as="after-move")
        assert mem.head(APP, USER) == v[2]


def test_redaction_erases_from_every_branch() -> None:
    with hash_store() as mem:
        story(mem)
        mem.branch(APP, USER, "a")
        mem.branch(APP, USER, "gone")
        mem.delete_branch(APP, USER, "gone")
        report = mem.redact(APP, USER, "bakery", reason="user asked", by="text")
        assert report["items"] == ["job"] and len(report["branches"]) == 2
        mem.checkout(APP, USER, "a")
        assert "job" not in mem.snapshot(APP, USER)
        assert mem.search(APP, USER, "bakery", mode="lexical") == []
        db = mem.backend
        left = db.conn.execute("SELECT count(*) FROM blobs WHERE text LIKE '%bakery%'").fetchone()
        assert left[0] == 0  # the deleted branch's copy too


def test_merge_again_uses_the_last_merge_as_base() -> None:
    with hash_store() as mem:
        story(mem)
        mem.branch(APP, USER, "b")
        mem.checkout(APP, USER, "b")
        put(mem, "pet", "I have a dog")
        mem.checkout(APP, USER, "main")
        put(mem, "pet", "I have two cats")
        mem.merge(APP, USER, "b", strategy="ours")
        mem.checkout(APP, USER, "b")
        put(mem, "job", "I work at a zoo")  # pet unchanged on b since the merge
        mem.checkout(APP, USER, "main")
        done = mem.merge(APP, USER, "b")  # no conflict: pet was settled by the last merge
        assert done["conflicts"] == [] and done["changes"] == {"job": "I work at a zoo"}
        assert mem.snapshot(APP, USER)["pet"] == "I have two cats"
        # and the other way: main's merges are a base for merging main into b
        mem.checkout(APP, USER, "b")
        done = mem.merge(APP, USER, "main", preview=True)
        assert done["conflicts"] == [] and done["version"] is None
        assert mem.snapshot(APP, USER)["pet"] == "I have a dog"  # preview wrote nothing


def test_diff_of_versions_on_two_branches_and_branch_listing() -> None:
    with hash_store() as mem:
        v = story(mem)
        mem.branch(APP, USER, "x", at=v[0])
        mem.checkout(APP, USER, "x")
        bx = put(mem, "home", "I live in Oslo")
        mem.checkout(APP, USER, "main")
        d = mem.diff(APP, USER, v[0], bx)  # v[0] on main (checked out), bx by its id block
        assert d["changed"] == {"home": {"before": "I live in Paris", "after": "I live in Oslo"}}
        rows = mem.branches(APP, USER)
        assert [(r["name"], r["checked_out"]) for r in rows] == [("main", True), ("x", False)]
        with pytest.raises(UnknownVersionError):
            mem.diff(APP, USER, 99, "x")


def test_clone_carries_branches() -> None:
    with hash_store() as mem:
        story(mem)
        mem.branch(APP, USER, "c")
        with mem.clone() as other:
            assert [b["name"] for b in other.branches(APP, USER)] == ["main", "c"]
            other.checkout(APP, USER, "c")
            assert other.snapshot(APP, USER) == mem.snapshot(APP, USER)


@pytest.mark.parametrize(
    ("call", "exc", "words"),
    [
        (lambda m: m.checkout(APP, USER, "nope"), UnknownBranchError, "no branch 'nope'"),
        (lambda m: m.merge(APP, USER, "main"), ValueError, "into itself"),
        (lambda m: m.merge(APP, USER, "nope"), UnknownBranchError, "branches are ['main', 'b']"),
        (lambda m: m.branch(APP, USER, "é" * 512 + "x"), ValueError, "1025 bytes"),
        (lambda m: m.branch(APP, USER, "b"), ValueError, "already exists"),
        (lambda m: m.branch(APP, USER, ""), ValueError, "name"),
        (lambda m: m.branch(APP, USER, 3), TypeError, "name"),
        (lambda m: m.branch(APP, USER, "z", at=99), UnknownVersionError, "99"),
        (lambda m: m.delete_branch(APP, USER, "main"), ValueError, "main branch"),
        (lambda m: m.delete_branch(APP, USER, "nope"), UnknownBranchError, "nope"),
        (lambda m: m.merge(APP, USER, "b", strategy="mine"), ValueError, "strategy"),
        (lambda m: m.merge(APP, USER, "b", resolutions={"pet": "mine"}), ValueError, "pet"),
        (lambda m: m.merge(APP, USER, "b", resolutions=["pet"]), TypeError, "resolutions"),
        (lambda m: m.head(APP, "\x1fbranch\x1f1\x1f1"), ValueError, "reserved"),
    ],
)
def test_bad_branch_input_is_a_clear_error(call: Any, exc: type, words: str) -> None:
    with hash_store() as mem:
        story(mem)
        mem.branch(APP, USER, "b")
        before = [(b["name"], b["head"]) for b in mem.branches(APP, USER)]
        with pytest.raises(exc, match=words.replace("[", r"\[").replace("]", r"\]")):
            call(mem)
        assert [(b["name"], b["head"]) for b in mem.branches(APP, USER)] == before


def test_unresolved_conflict_and_checked_out_delete_write_nothing() -> None:
    with hash_store() as mem:
        story(mem)
        mem.branch(APP, USER, "b")
        mem.checkout(APP, USER, "b")
        put(mem, "pet", "a dog")
        with pytest.raises(ValueError, match="checked out"):
            mem.delete_branch(APP, USER, "b")
        mem.checkout(APP, USER, "main")
        put(mem, "pet", "a bird")
        head = mem.head(APP, USER)
        with pytest.raises(MergeConflictError, match="pet"):
            mem.merge(APP, USER, "b", resolutions={"job": "theirs"})
        assert mem.head(APP, USER) == head


def test_integrity_covers_branches() -> None:
    with hash_store() as mem:
        story(mem)
        mem.branch(APP, USER, "b")
        assert mem.check_integrity(APP, USER) == []
        with mem.backend.transaction() as conn:
            conn.execute("UPDATE branches SET base_vid = 77 WHERE name = 'b'")
        assert any("branch 'b'" in p for p in mem.check_integrity(APP, USER))


def test_store_from_before_branches_gains_the_table(tmp_path: Path) -> None:
    """A store written by a version without branches (no ``branches`` table) opens,
    keeps its data, and branches."""
    location = shared_location(tmp_path, "old")
    with hash_store(location) as mem:
        story(mem)
        with mem.backend.transaction() as conn:
            conn.execute("DROP TABLE IF EXISTS branches")
    with hash_store(location) as mem:
        assert mem.snapshot(APP, USER)["pet"] == "I have a cat named Tom"
        mem.branch(APP, USER, "new")
        assert [b["name"] for b in mem.branches(APP, USER)] == ["main", "new"]
        assert mem.check_integrity(APP, USER) == []


# -- crash and concurrency ------------------------------------------------------------------

_MERGE_CHILD = """
import sys
from chronomem import ChronoMem, HashEmbedder
mem = ChronoMem(sys.argv[1], embedder=HashEmbedder())
n = 0
print("ready", flush=True)
while True:
    n += 1
    for name, text in (("side", f"side {n}"), ("main", f"main {n}")):
        mem.checkout("app", "ann", name)
        mem.commit("app", "ann", [{"op": "update", "item_id": "pet", "text": text},
                   {"op": "update", "item_id": name, "text": text}], source="t", reason="t")
    print("start", mem.head("app", "ann"), flush=True)
    vid = mem.merge("app", "ann", "side", strategy="theirs")["version"]
    print("done", vid, flush=True)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


@pytest.mark.slow  # subprocess crash loop
def test_sigkill_during_merge_leaves_before_or_after(tmp_path: Path) -> None:
    location = shared_location(tmp_path, "crash")
    with hash_store(location) as mem:
        story(mem)
        mem.branch(APP, USER, "side")
    rng = random.Random(11)
    for _ in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", _MERGE_CHILD, location],
            stdout=subprocess.PIPE, text=True, env=_env(), cwd=ROOT,
        )  # fmt: skip
        assert proc.stdout is not None and proc.stdout.readline().startswith("ready")
        assert proc.stdout.readline().startswith("start")
        time.sleep(rng.uniform(0.05, 0.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        lines = proc.stdout.read().splitlines()
        with hash_store(location) as mem:
            assert mem.check_integrity(APP, USER) == []
            last = mem.versions(APP, USER)[-1]
            if last.op == "merge":  # a merge is whole: both items of the side's commit
                d = mem.diff(APP, USER, last.version_id, last.labels["merge_parent"])
                assert "pet" not in d["changed"] and "side" not in d["changed"]
            assert all(ln.split()[0] in ("start", "done") for ln in lines if ln)


_BRANCH_WRITER = """
import sys
from chronomem import ChronoMem, HashEmbedder
mem = ChronoMem(sys.argv[1], embedder=HashEmbedder())
name, n = sys.argv[2], int(sys.argv[3])
mem.checkout("app", "ann", name)
for i in range(n):
    vid = mem.commit("app", "ann", [{"op": "add", "item_id": f"{name}-{i}", "text": f"{name} {i}"}],
                     source=name, reason="concurrency")
    print(vid, flush=True)
"""


@pytest.mark.slow  # two writer processes
def test_concurrent_writers_on_two_branches_lose_nothing(tmp_path: Path) -> None:
    location = shared_location(tmp_path, "two")
    with hash_store(location) as mem:
        story(mem)
        mem.branch(APP, USER, "left")
        mem.branch(APP, USER, "right")
    n = 40
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _BRANCH_WRITER, location, name, str(n)],
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
            cwd=ROOT,
        )  # fmt: skip
        for name in ("left", "right")
    ]
    outs = [p.communicate(timeout=300)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    with hash_store(location) as mem:
        for name, out in zip(("left", "right"), outs, strict=True):
            mem.checkout(APP, USER, name)
            hist = [v.version_id for v in mem.versions(APP, USER)]
            assert hist[2:] == [int(x) for x in out] and len(out) == n
            assert sum(k.startswith(name) for k in mem.snapshot(APP, USER)) == n
        assert mem.check_integrity(APP, USER) == []
        assert json.dumps(sorted(b["name"] for b in mem.branches(APP, USER))) == (
            '["left", "main", "right"]'
        )
