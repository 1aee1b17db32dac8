"""PostgreSQL's one-round-trip commit (the server function of chronomem.pg.commitfn):
what it cannot check in the client it checks under the lock, and racing writers lose
nothing. (That it stores exactly what the other paths store: test_memory_pg_fastwrite.)"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from chronobench.bench.synthetic import synthetic_writes
from chronomem import ChronoMem, HashEmbedder
from chronomem.pg import commitfn, fastwrite, lexical
from chronomem.reads import find_scope
from tests._memory_fixtures import APP, USER, add


def _delete(item: str) -> dict[str, Any]:
    return {"op": "delete", "item_id": item}


def test_a_deleted_text_changed_after_it_was_read_is_described_as_it_is(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = ChronoMem(pg_url, embedder=HashEmbedder())
    other = ChronoMem(pg_url, embedder=HashEmbedder())
    mem.commit(APP, USER, [add("city", "Ann lives in Oslo")], source="s", reason="r")
    mem.commit(APP, USER, [add("pet", "Ann has a dog")], source="s", reason="r")
    original = commitfn.payload
    fallbacks: list[Any] = []

    def racing(*args: Any) -> str:
        # after this writer read the text its descriptor quotes, another one changes it
        commitfn.payload = original
        other.commit(APP, USER, [add("city", "Ann lives in Rome")], source="s", reason="r")
        return original(*args)

    def pipelined(*args: Any) -> Any:
        fallbacks.append(args)
        return original_pipeline(*args)

    original_pipeline = fastwrite.commit_writes
    monkeypatch.setattr(commitfn, "payload", racing)
    monkeypatch.setattr(fastwrite, "commit_writes", pipelined)
    vid = mem.commit(APP, USER, [_delete("city")], source="s", reason="r")
    assert len(fallbacks) == 1  # the function wrote nothing and said so
    version = next(v for v in mem.versions(APP, USER) if v.version_id == vid)
    assert "delete: Ann lives in Rome" in version.descriptor
    assert mem.snapshot(APP, USER) == {"pet": "Ann has a dog"}
    assert [v.version_id for v in mem.versions(APP, USER)] == [0, 1, 2, 3, 4]
    assert mem.check_integrity(APP, USER) == []
    other.close()
    mem.close()


def test_the_first_write_of_a_scope_takes_the_generic_path(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []
    original = commitfn.commit_writes

    def spy(*args: Any) -> Any:
        seen.append(original(*args))
        return seen[-1]

    monkeypatch.setattr(commitfn, "commit_writes", spy)
    with ChronoMem(pg_url, embedder=HashEmbedder()) as mem:
        mem.commit(APP, USER, [add("a", "Ann")], source="s", reason="r")
        mem.commit(APP, USER, [add("b", "Bo")], source="s", reason="r")
        assert seen == [None, [2]]  # declined, nothing written (no scope row yet); then taken
        assert mem.snapshot(APP, USER) == {"a": "Ann", "b": "Bo"}


def test_racing_writers_of_one_scope_and_of_their_own_lose_nothing(pg_url: str) -> None:
    """Threads, each with its own connection: three write one scope (adds, updates and
    deletes of shared items, so quoted texts go stale under them), one writes its own."""
    ChronoMem(pg_url, embedder=HashEmbedder()).close()  # create the schema before the race
    rounds = 25
    done: dict[str, list[int]] = {}
    errors: list[BaseException] = []

    def writer(tag: str, user: str) -> None:
        try:
            with ChronoMem(pg_url, embedder=HashEmbedder()) as mem:
                vids = []
                for i in range(rounds):
                    shared = f"shared{i % 3}"
                    ops = [add(f"{tag}-{i}", f"{tag} fact {i}")]
                    if i % 4 == 3:
                        ops.append(_delete(shared))
                    else:
                        ops.append(add(shared, f"{tag} says {i}"))
                    vids.append(mem.commit(APP, user, ops, source=tag, reason="race"))
                done[tag] = vids
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=(tag, user))
        for tag, user in [("p0", USER), ("p1", USER), ("p2", USER), ("b0", "bob")]
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    with ChronoMem(pg_url, embedder=HashEmbedder()) as mem:
        ann = [v for tag in ("p0", "p1", "p2") for v in done[tag]]
        hist = mem.versions(APP, USER)
        assert len(ann) == len(set(ann)) == 3 * rounds
        assert [v.seq for v in hist] == list(range(3 * rounds + 1))
        assert {v.version_id for v in hist[1:]} == set(ann)
        assert len(mem.versions(APP, "bob")) == rounds + 1
        # every delete's descriptor quotes the text its item had just before it
        for prev, v in zip(hist[:-1], hist[1:], strict=True):
            first, *rest = v.descriptor.splitlines()
            deleted = [line for line in rest if line.startswith("delete: ")]
            if deleted:
                shared = f"shared{int(first.rsplit(' ', 1)[1]) % 3}"  # "add: p1 fact 7"
                before = mem.snapshot(APP, USER, prev.version_id)
                assert deleted == [f"delete: {before.get(shared, shared)}"], v.version_id
        assert mem.check_integrity(APP, USER) == [] and mem.check_integrity(APP, "bob") == []


def _counted_by_hand(mem: Any, table: str) -> dict[str, int]:
    rows = mem.conn.execute(f"SELECT term, count(*) FROM {table} GROUP BY term").fetchall()
    return {t: int(n) for t, n in rows}


def test_document_counts_read_exact_while_the_function_defers_them(pg_url: str) -> None:
    mem = ChronoMem(pg_url, embedder=HashEmbedder())
    writes = synthetic_writes(lexical.FOLD_EVERY + 20, seed=3)
    db = mem._db
    for j, w in enumerate(writes):
        mem.commit(APP, USER, **w)
        if j % 17 and j != lexical.FOLD_EVERY + 5:
            continue
        # at a few points before and after the function's fold: some documents
        # uncounted, and the counts read as a recount of every posting says
        sid = find_scope(db, APP, USER).scope_id
        uncounted = mem.conn.execute("SELECT count(*) FROM desc_docs WHERE NOT counted")
        assert j < 2 or uncounted.fetchone()[0] > 0
        for table, read in (("item_terms", db.item_stats), ("desc_terms", db.descriptor_stats)):
            want = _counted_by_hand(mem, table)
            terms = sorted(want)[:40] + ["nosuchterm"]
            got = read(sid, terms)[2]
            assert got == [want.get(t, 0) for t in terms], table
    stored = mem.conn.execute("SELECT uncounted FROM scopes").fetchone()[0]
    assert 0 < stored < lexical.FOLD_EVERY  # the function folded once on the way
    mem.close()
