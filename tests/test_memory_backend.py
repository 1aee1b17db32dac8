"""The storage seam: SQLiteBackend provides every operation of the Backend protocol."""

from __future__ import annotations

import inspect

from chronomem import ChronoMem, HashEmbedder
from chronomem.backend import Backend, open_backend
from chronomem.sqlite_backend import SQLiteBackend


def _members(cls: type) -> set[str]:
    own = {n for n in vars(cls) if not n.startswith("_")}
    return own | set(getattr(cls, "__annotations__", {}))


def test_sqlite_backend_has_every_protocol_member_with_its_parameters() -> None:
    members = _members(Backend)
    assert {"conn", "transaction", "match_descriptors", "put_vectors", "purge"} <= members
    db = open_backend(":memory:")
    assert isinstance(db, SQLiteBackend)
    for name in sorted(members):
        assert hasattr(db, name), name
        proto = getattr(Backend, name, None)
        if inspect.isfunction(proto):
            want = list(inspect.signature(proto).parameters)
            got = list(inspect.signature(getattr(SQLiteBackend, name)).parameters)
            assert got == want, name
    db.close()


def test_store_runs_on_the_backend_it_opened() -> None:
    mem = ChronoMem(":memory:", embedder=HashEmbedder())
    mem.commit(
        "a",
        "u",
        [{"op": "add", "item_id": "x", "text": "Ann lives in Oslo"}],
        source="t",
        reason="r",
    )
    db = mem._db
    sid = mem.conn.execute("SELECT scope_id FROM scopes").fetchone()[0]
    assert db.match_descriptors(sid, ["oslo"], 5)[0][0] == 1
    assert db.descriptor_scores(sid, ["oslo", "nowhere"], [1]) == dict(
        db.match_descriptors(sid, ["oslo", "nowhere"], 5)
    )
    assert db.descriptor_scores(sid, ["nowhere"], [1]) == {1: None}
    owners, matrix = db.scope_vectors(sid)
    assert owners.tolist() == [1] and matrix.shape == (1, 64)
    mem.close()
