"""ChronoMem API behaviour on real SQLite and PostgreSQL (hash embedder; MiniLM tests are
separate)."""

from __future__ import annotations

import sqlite3

import pytest

from chronobench.data.schema import MemoryOp, Write
from chronomem import (
    EmptyScopeError,
    InvalidOpError,
    UnknownVersionError,
    split_windows,
)
from tests._memory_fixtures import (
    APP,
    USER,
    add,
    facts_store,
    hash_store,
    on_postgres,
    shared_location,
)

pytestmark = pytest.mark.usefixtures("each_backend")  # every test on SQLite and PostgreSQL


def test_commit_versions_snapshot_and_root() -> None:
    mem, vids = facts_store()
    assert vids == [1, 2, 3, 4, 5]
    assert mem.head(APP, USER) == 5
    hist = mem.versions(APP, USER)
    assert [v.seq for v in hist] == [0, 1, 2, 3, 4, 5]
    assert hist[0].version_id == 0 and hist[0].op == "root"
    assert [v.parent for v in hist[1:]] == [0, 1, 2, 3, 4]
    assert mem.snapshot(APP, USER, 0) == {}
    assert mem.snapshot(APP, USER, 3)["city"] == "Ann lives in Oslo, Norway"
    assert mem.snapshot(APP, USER)["city"] == "Ann moved to Lisbon, Portugal"
    assert set(mem.snapshot(APP, USER)) == {"city", "job", "poison", "pet"}
    assert mem.check_integrity(APP, USER) == []


def test_memoryop_objects_labels_and_commit_many_match_commit() -> None:
    a, b = hash_store(), hash_store()
    writes = [
        Write(version=1, ops=[MemoryOp(op="add", item_id="x", text="one")], labels={"session": 1}),
        Write(version=2, ops=[MemoryOp(op="update", item_id="x", text="two")], summary="s2"),
        Write(version=3, ops=[MemoryOp(op="delete", item_id="x")]),
    ]
    ids_many = a.commit_many(APP, USER, writes)
    ids_one = [
        b.commit(
            APP, USER, w.ops, source=w.source, reason=w.reason, labels=w.labels, summary=w.summary
        )
        for w in writes
    ]
    assert ids_many == ids_one == [1, 2, 3]
    assert [v.descriptor for v in a.versions(APP, USER)] == [
        v.descriptor for v in b.versions(APP, USER)
    ]
    assert a.versions(APP, USER)[1].labels == {"session": 1}
    assert "delete: two" in a.versions(APP, USER)[3].descriptor  # deleted text is described
    assert a.snapshot(APP, USER, 2) == {"x": "two"} and a.snapshot(APP, USER) == {}


@pytest.mark.parametrize("mode", ["truncate", "revert"])
def test_rollback_modes_restore_state_and_indexes(mode: str) -> None:
    mem, _ = facts_store()
    before = mem.snapshot(APP, USER, 2)
    new_head = mem.rollback_to_version(APP, USER, 2, mode=mode)
    assert mem.snapshot(APP, USER) == before
    assert mem.check_integrity(APP, USER) == []
    hist = mem.versions(APP, USER)
    if mode == "truncate":
        assert new_head == 2 and [v.version_id for v in hist] == [0, 1, 2]
        # reads see nothing after v2: search and resolve only know S(v2)/history up to v2
        assert mem.search(APP, USER, "beagle puppy Rex", 5, mode="lexical") == []
        assert all("beagle" not in h.text for h in mem.search(APP, USER, "beagle", 5))
        assert all(v <= 2 for v, _ in mem.resolve_lexical(APP, USER, "Lisbon beagle", 5))
        nxt = mem.commit(APP, USER, [add("z", "zebra")], source="t", reason="t")
        assert nxt == 6 and mem.versions(APP, USER)[-1].seq == 3  # ids never reused
    else:
        assert new_head == 6 and len(hist) == 7 and hist[-1].op == "revert"
        assert mem.snapshot(APP, USER, 5)["pet"].startswith("Ann adopted")
    assert mem.check_integrity(APP, USER) == []


def test_rollback_to_root_and_back_and_forth() -> None:
    mem, _ = facts_store()
    mem.rollback_to_version(APP, USER, 4, mode="revert")
    mem.rollback_to_version(APP, USER, 0, mode="revert")
    assert mem.snapshot(APP, USER) == {}
    assert mem.check_integrity(APP, USER) == []
    mem.rollback_to_version(APP, USER, 5, mode="revert")
    assert set(mem.snapshot(APP, USER)) == {"city", "job", "poison", "pet"}
    mem.rollback_to_version(APP, USER, 0)
    assert mem.head(APP, USER) == 0 and mem.snapshot(APP, USER) == {}
    assert mem.check_integrity(APP, USER) == []


def test_clear_errors() -> None:
    mem, _ = facts_store()
    with pytest.raises(UnknownVersionError, match="not on this scope's history"):
        mem.rollback_to_version(APP, USER, 99)
    with pytest.raises(UnknownVersionError):
        mem.snapshot(APP, USER, 42)
    with pytest.raises(EmptyScopeError, match="no committed versions"):
        mem.rollback_to_version(APP, "nobody", 0)
    with pytest.raises(EmptyScopeError):
        mem.rollback_to_version_by_nl_query(APP, "nobody", "undo everything")
    with pytest.raises(ValueError, match="mode"):
        mem.rollback_to_version(APP, USER, 1, mode="reset")  # type: ignore[arg-type]
    with pytest.raises(InvalidOpError, match="choose one of"):
        mem.commit(
            APP, USER, [{"op": "upsert", "item_id": "a", "text": "x"}], source="s", reason="r"
        )
    with pytest.raises(InvalidOpError, match="needs a text"):
        mem.commit(APP, USER, [{"op": "add", "item_id": "a"}], source="s", reason="r")
    with pytest.raises(InvalidOpError, match="at least one op"):
        mem.commit(APP, USER, [], source="s", reason="r")
    with pytest.raises(ValueError, match="user must be"):
        mem.head(APP, "")
    assert mem.head(APP, USER) == 5  # failed calls changed nothing
    assert mem.check_integrity(APP, USER) == []


def test_scope_isolation() -> None:
    mem, _ = facts_store()
    mem.commit(APP, "bob", [add("city", "Bob lives in Lisbon")], source="s", reason="r")
    mem.commit("other-app", USER, [add("note", "Lisbon secret")], source="s", reason="r")
    assert mem.snapshot(APP, "bob") == {"city": "Bob lives in Lisbon"}
    assert [h.item_id for h in mem.search(APP, "bob", "Lisbon", 10)] == ["city"]
    assert [v for v, _ in mem.resolve_lexical(APP, "bob", "Lisbon", 10)] == [1]
    assert all(v in range(6) for v, _ in mem.resolve_hybrid(APP, USER, "Lisbon secret", 10))
    mem.rollback_to_version(APP, "bob", 0)
    assert mem.snapshot(APP, "bob") == {} and mem.head(APP, USER) == 5
    assert mem.snapshot("other-app", USER) == {"note": "Lisbon secret"}
    mem.redact(APP, USER, "Lisbon", reason="test")
    assert mem.snapshot("other-app", USER) == {"note": "Lisbon secret"}
    for app, user in [(APP, USER), (APP, "bob"), ("other-app", USER)]:
        assert mem.check_integrity(app, user) == []


def test_search_is_scoped_to_head() -> None:
    mem, _ = facts_store()
    hits = mem.search(APP, USER, "where does Ann live", 2, mode="lexical")
    assert hits and hits[0].item_id == "city" and "Lisbon" in hits[0].text
    assert all("Oslo" not in h.text for h in mem.search(APP, USER, "Oslo Norway", 10))


def test_redaction_erases_everywhere(tmp_path) -> None:
    path = str(tmp_path / "m.db")
    mem, _ = facts_store()
    mem = mem.clone() if on_postgres() else mem.clone(path)
    detail = mem.redact(APP, USER, "poison", reason="user request")
    assert detail["items"] == ["poison"]
    for v in mem.versions(APP, USER):
        assert "hunter2" not in v.descriptor
        assert "poison" not in mem.snapshot(APP, USER, v.version_id)
    assert mem.resolve_lexical(APP, USER, "hunter2 password", 5) == []
    assert mem.check_integrity(APP, USER) == []
    mem.rollback_to_version(APP, USER, 3, mode="revert")
    assert "poison" not in mem.snapshot(APP, USER)
    audit = mem.conn.execute("SELECT action, reason FROM audit WHERE action='redact'").fetchall()
    assert audit == [("redact", "user request")]
    mem.close()
    if not on_postgres():  # the server's files: tests/test_memory_pg_server.py
        with open(path, "rb") as fh:
            assert b"hunter2" not in fh.read()


def test_redact_op_inside_commit() -> None:
    mem, _ = facts_store()
    vid = mem.commit(APP, USER, [{"op": "redact", "item_id": "poison"}], source="s", reason="r")
    assert vid == 6 and "poison" not in mem.snapshot(APP, USER, 3)
    assert mem.check_integrity(APP, USER) == []


def test_answer_provenance() -> None:
    mem, _ = facts_store()
    a1 = mem.record_answer(APP, USER, "Ann lives in Lisbon.", ["city"])
    mem.record_answer(APP, USER, "Ann is a nurse.", ["job"])
    assert mem.answers_relying_on_changed(APP, USER) == []
    mem.rollback_to_version(APP, USER, 3)
    changed = mem.answers_relying_on_changed(APP, USER)
    assert [c["answer_id"] for c in changed] == [a1] and changed[0]["changed_items"] == ["city"]


def test_clone_is_independent_and_context_manager() -> None:
    mem, _ = facts_store()
    with mem.clone() as copy:
        copy.rollback_to_version(APP, USER, 1)
        assert copy.head(APP, USER) == 1 and mem.head(APP, USER) == 5
        assert copy.check_integrity(APP, USER) == []
    with pytest.raises(RuntimeError, match="closed"):
        copy.head(APP, USER)


def test_long_descriptor_split_not_truncated() -> None:
    words = [f"w{i}" for i in range(1000)]
    windows = split_windows(" ".join(words), 200, lambda t: len(t.split()))
    assert len(windows) == 5 and " ".join(windows).split() == words
    mem = hash_store()
    mem.commit(APP, USER, [add("log", " ".join(words) + " zanzibar")], source="s", reason="r")
    n_chunks = mem.conn.execute("SELECT count(*) FROM desc_vecs").fetchone()[0]
    assert n_chunks == 6  # 1001 words plus "add:" -> six windows of <= 200 words
    assert mem.resolve_dense(APP, USER, "zanzibar", 1)[0][0] == 1


def test_store_reopens_with_its_data(tmp_path) -> None:
    path = shared_location(tmp_path, "m")
    mem = hash_store(path)
    mem.commit(APP, USER, [add("a", "alpha")], source="s", reason="r")
    mem.close()
    again = hash_store(path)
    assert again.snapshot(APP, USER) == {"a": "alpha"}
    if not on_postgres():
        assert again.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert isinstance(again.conn, sqlite3.Connection)
    again.close()


def test_retrieval_stage_switch() -> None:
    mem, vids = facts_store()
    query = "undo the beagle puppy Rex"
    for stage in ("lexical", "dense", "hybrid"):
        ranked = mem.resolve(APP, USER, query, 3, stage=stage)
        assert ranked and ranked[0][0] == vids[3], stage  # parent of the pet commit
    with pytest.raises(ValueError, match="stage"):
        mem.resolve(APP, USER, query, stage="bm25")
    with pytest.raises(ValueError, match="stage"):
        hash_store(stage="sparse")
    lexical = hash_store(stage="lexical")
    assert lexical.stage == "lexical" and lexical.clone().stage == "lexical"


def test_hidden_history_is_invisible_to_every_read_and_compact_keeps_reads() -> None:
    mem, _ = facts_store()
    mem.rollback_to_version(APP, USER, 2)
    new = mem.commit(APP, USER, [add("car", "Ann bought a red car")], source="t", reason="t")

    def reads() -> tuple:
        return (
            [v.version_id for v in mem.versions(APP, USER)],
            mem.snapshot(APP, USER),
            sorted(v for v, _ in mem.resolve_dense(APP, USER, "Lisbon beagle password", 10)),
            sorted(v for v, _ in mem.resolve_hybrid(APP, USER, "Lisbon beagle password", 10)),
            [h.item_id for h in mem.search(APP, USER, "Lisbon beagle password car", 10)],
        )

    got = reads()
    assert got[0] == [0, 1, 2, new] and set(got[1]) == {"city", "job", "car"}
    assert set(got[2]) <= {1, 2, new} and set(got[3]) <= {1, 2, new}
    assert set(got[4]) <= {"city", "job", "car"}
    with pytest.raises(UnknownVersionError):
        mem.snapshot(APP, USER, 4)  # discarded by the truncate
    mem.compact(APP, USER)
    assert reads() == got and mem.check_integrity(APP, USER) == []


def test_search_reads_head_once_per_state_and_follows_every_change() -> None:
    mem, _ = facts_store()
    first = mem.search(APP, USER, "where does Ann live", 3)
    assert mem.search(APP, USER, "where does Ann live", 3) == first  # served by the item cache
    copy = mem.clone()
    mem.commit(APP, USER, [add("city2", "Ann moved to Porto")], source="t", reason="t")
    assert any("Porto" in h.text for h in mem.search(APP, USER, "Ann moved Porto", 5))
    assert all("Porto" not in h.text for h in copy.search(APP, USER, "Ann moved Porto", 5))
    copy.rollback_to_version(APP, USER, mem.versions(APP, USER)[1].version_id)
    assert all("Lisbon" not in h.text for h in copy.search(APP, USER, "Lisbon Portugal", 5))
    copy.close()
