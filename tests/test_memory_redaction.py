"""Redaction: exact semantics, and raw-byte scans of db/-wal/-shm for every place text lives."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from chronomem import ChronoMem
from tests._memory_fixtures import APP, USER, add, hash_store, on_postgres

# Tests taking ``each_backend`` run on SQLite and PostgreSQL; the byte scans of files are
# SQLite's (the server's data files: tests/test_memory_pg_server.py).

SECRET = "Zq7xVaultCode"  # one FTS token; the index stores it lower-cased


def _files(path: Path) -> list[Path]:
    return [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]


def _leaks(path: Path, needle: str = SECRET) -> list[str]:
    """Files (db, -wal, -shm) whose raw bytes still hold the needle, in any case."""
    out = []
    for p in _files(path):
        data = p.read_bytes()
        for form in {needle, needle.lower()}:
            if form.encode() in data:
                out.append(f"{p.name}:{form}")
    return out


def _story(path: Path | None) -> ChronoMem:
    mem = hash_store(None if path is None else str(path))
    mem.commit(APP, USER, [add("city", "Ann lives in Oslo")], source="chat", reason="r")
    mem.commit(APP, USER, [add("job", "Ann is a nurse")], source="chat", reason="r")
    return mem


def _api_text(mem: ChronoMem) -> str:
    """Everything the public API can read back, as one string."""
    parts = [repr(mem.versions(APP, USER)), repr(mem.snapshot(APP, USER))]
    parts += [repr(mem.snapshot(APP, USER, v.version_id)) for v in mem.versions(APP, USER)]
    parts += [
        repr(mem.search(APP, USER, SECRET, 10)),
        repr(mem.answers_relying_on_changed(APP, USER)),
    ]
    return "\n".join(parts)


def _forms() -> list[bytes]:
    """The secret as written, lower-cased (FTS5) and stemmed (PostgreSQL's term rows)."""
    from chronomem.pg.lexical import tokenizer

    stems = [t for toks in tokenizer().tokens([SECRET]) for t in toks]
    return [f.encode() for f in dict.fromkeys([SECRET, SECRET.lower(), *stems])]


def _scan_all_tables(mem: ChronoMem) -> list[str]:
    """Rows of every table (FTS shadow tables, term tables included) still holding the
    secret."""
    hits = []
    if on_postgres():
        tables = [
            r[0]
            for r in mem.conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        ]
    else:
        sql = "SELECT name FROM sqlite_master WHERE type='table'"
        tables = [r[0] for r in mem.conn.execute(sql)]
    forms = _forms()
    for t in tables:
        for row in mem.conn.execute(f'SELECT * FROM "{t}"'):
            blob = b"".join(
                x if isinstance(x, bytes) else str(x).encode("utf-8", "surrogatepass") for x in row
            )
            if any(f in blob for f in forms):
                hits.append(t)
    return hits


CASES = {
    "item": lambda m: m.commit(
        APP, USER, [add("vault", f"the vault code is {SECRET}")], source="chat", reason="r"
    ),
    "summary": lambda m: m.commit(
        APP, USER, [add("x", "harmless")], source="chat", reason="r", summary=f"{SECRET} noted"
    ),
    "label": lambda m: m.commit(
        APP, USER, [add("y", "harmless too")], source="chat", reason="r", labels={"tag": SECRET}
    ),
    "answer": lambda m: m.record_answer(APP, USER, f"Your code is {SECRET}.", ["city"]),
    "nl_truncate": lambda m: m.rollback_to_version_by_nl_query(
        APP, USER, f"undo the nurse job {SECRET}", mode="truncate"
    ),
    "nl_revert": lambda m: m.rollback_to_version_by_nl_query(
        APP, USER, f"undo the nurse job {SECRET}", mode="revert"
    ),
    "truncated_history": lambda m: (
        m.commit(APP, USER, [add("vault", f"code {SECRET}")], source="chat", reason="r"),
        m.rollback_to_version(APP, USER, 1),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_redact_by_text_leaves_no_bytes(each_backend: str, tmp_path: Path, case: str) -> None:
    path = tmp_path / "s.db"
    mem = _story(None if on_postgres() else path)
    CASES[case](mem)
    assert _scan_all_tables(mem), "the case must actually store the secret"
    report = mem.redact(APP, USER, SECRET, reason="user asked", by="text")
    assert report["wal_checkpointed"] is True
    assert _scan_all_tables(mem) == [] and SECRET not in _api_text(mem)
    assert mem.check_integrity(APP, USER) == []
    mem.close()
    if not on_postgres():
        assert _leaks(path) == []
        assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0


def test_redact_by_id_after_truncate_erases_hidden_history(
    each_backend: str, tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    mem = _story(None if on_postgres() else path)
    vid = mem.commit(APP, USER, [add("vault", f"code {SECRET}")], source="chat", reason="r")
    mem.commit(
        APP,
        USER,
        [{"op": "update", "item_id": "vault", "text": "code gone"}],
        source="c",
        reason="r",
    )
    mem.rollback_to_version(APP, USER, 2)  # vault is no longer in the current history
    report = mem.redact(APP, USER, "vault", reason="gdpr")
    assert report["by"] == "id" and report["items"] == ["vault"] and vid in report["versions"]
    assert _scan_all_tables(mem) == []
    mem.close()
    assert on_postgres() or (_leaks(path) == [] and _leaks(path, "code gone") == [])


def test_second_redaction_restores_secure_delete_and_still_erases(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    mem = _story(path)
    mem.conn.execute("PRAGMA secure_delete = ON")  # a caller's own setting is kept
    for i, word in enumerate(["FirstSecretQx", SECRET]):
        mem.commit(APP, USER, [add(f"s{i}", f"{word} here")], source="c", reason="r")
        mem.redact(APP, USER, word, reason="r")
        assert mem.conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
    mem.conn.execute("PRAGMA secure_delete = OFF")
    mem.commit(APP, USER, [add("s9", "ThirdSecretQx here")], source="c", reason="r")
    mem.redact(APP, USER, "ThirdSecretQx", reason="r")
    assert mem.conn.execute("PRAGMA secure_delete").fetchone()[0] == 0  # prior value restored
    mem.close()
    for word in ("FirstSecretQx", SECRET, "ThirdSecretQx"):
        assert _leaks(path, word) == []


def test_redact_by_id_is_exact(each_backend: str) -> None:
    mem = hash_store()
    mem.commit(APP, USER, [add("a", "shared secret text")], source="c", reason="r")
    mem.commit(APP, USER, [add("b", "shared secret text")], source="c", reason="r")
    mem.commit(APP, USER, [add("pet", "Ann has a cat")], source="c", reason="r")
    mem.commit(APP, USER, [add("c", "Ann won the competition")], source="c", reason="r")
    report = mem.redact(APP, USER, "a", reason="r")
    assert report["items"] == ["a"]
    snap = mem.snapshot(APP, USER)
    assert "a" not in snap and snap["b"] == "shared secret text"  # the twin is not redacted
    mem.redact(APP, USER, "pet", reason="r")
    assert mem.snapshot(APP, USER)["c"] == "Ann won the competition"  # no substring surgery
    assert "competition" in mem.versions(APP, USER)[-1].descriptor
    assert mem.check_integrity(APP, USER) == []
    with pytest.raises(ValueError, match="by='text'"):
        mem.redact(APP, USER, "nope", reason="r", by="id")


def test_redact_by_text_reports_every_item_and_version(each_backend: str) -> None:
    mem = hash_store()
    v1 = mem.commit(APP, USER, [add("a", f"alpha {SECRET}")], source="c", reason="r")
    v2 = mem.commit(APP, USER, [add("b", f"beta {SECRET}")], source="c", reason="r")
    v3 = mem.commit(APP, USER, [add("c", "gamma")], source="c", reason="r", summary=SECRET)
    mem.commit(APP, USER, [add("d", "delta")], source="c", reason="r")
    report = mem.redact(APP, USER, SECRET, reason="r", by="text")
    assert report["items"] == ["a", "b"] and report["versions"] == [v1, v2, v3]
    assert set(mem.snapshot(APP, USER)) == {"c", "d"}
    assert mem.versions(APP, USER)[3].summary == "[redacted]"
    assert SECRET not in repr(report)  # the report (kept in the audit table) holds no text


def test_redact_unknown_scope_creates_nothing(each_backend: str) -> None:
    mem = hash_store()
    report = mem.redact(APP, "ghost", "anything", reason="r")
    assert report["items"] == [] and mem.scopes() == []


def test_compact_deletes_hidden_history_and_keeps_state(each_backend: str, tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    mem = _story(None if on_postgres() else path)
    for i in range(5):
        mem.commit(APP, USER, [add(f"t{i}", f"{SECRET} {i}")], source="c", reason="r")
    mem.rollback_to_version(APP, USER, 1)
    mem.commit(APP, USER, [add("z", "after")], source="c", reason="r")
    state = (mem.snapshot(APP, USER), [v.version_id for v in mem.versions(APP, USER)])
    counts = mem.compact(APP, USER)
    assert counts["versions"] == 6 and counts["blobs"] >= 5
    assert (mem.snapshot(APP, USER), [v.version_id for v in mem.versions(APP, USER)]) == state
    assert mem.check_integrity(APP, USER) == [] and _scan_all_tables(mem) == []
    mem.close()
    assert on_postgres() or _leaks(path) == []


def test_truncate_writes_constant_rows_whatever_it_discards(each_backend: str) -> None:
    changes = []
    for n in (10, 200):
        mem = hash_store()
        mem.commit_many(
            APP,
            USER,
            [{"ops": [add(f"i{j}", f"fact {j}")], "source": "s", "reason": "r"} for j in range(n)],
        )
        before = mem.conn.total_changes
        mem.rollback_to_version(APP, USER, 1)
        changes.append(mem.conn.total_changes - before)
        assert len(mem.snapshot(APP, USER)) == 1 and mem.check_integrity(APP, USER) == []
        assert mem.search(APP, USER, "fact 150", 5, mode="lexical")[0].item_id == "i0"
    assert changes[0] == changes[1] <= 4


def test_file_store_sqlite_level_check(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    mem = _story(path)
    CASES["item"](mem)
    mem.redact(APP, USER, "vault", reason="r")
    mem.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def _cache_keys(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT key FROM vectors")}
    finally:
        conn.close()


def test_redact_forgets_every_vector_derived_from_the_secret(tmp_path: Path) -> None:
    """Descriptor windows, reranker delta lines and an NL request quoting the secret were
    embedded through the persistent cache; after redaction none of their keys is left."""
    from chronobench.systems.stores import EMBEDDING_CACHE_FILE, StoreProvider
    from chronomem import DeltaReranker, HashEmbedder
    from chronomem.embedders import shared_cache, split_windows
    from chronomem.query import content_query
    from chronomem.rerank import delta_lines

    cache_dir = tmp_path / "cache"
    # Short windows, so the secret's descriptor is embedded as several windows.
    provider = StoreProvider(
        embedder="hash", cache_dir=cache_dir, reranker=DeltaReranker(), window_tokens=6
    )
    mem = provider.new_store(str(tmp_path / "s.db"))
    cache_file = cache_dir / EMBEDDING_CACHE_FILE
    mem.commit(APP, USER, [add("city", "Ann lives in Oslo")], source="chat", reason="r")
    ops = [add("job", "Ann is a nurse"), add("vault", f"the vault code is {SECRET} now")]
    mem.commit(APP, USER, ops, source="chat", reason="r", summary=f"noted {SECRET} today")
    mem.commit(APP, USER, [add("pet", "Ann has a cat")], source="chat", reason="r")
    assert mem.resolve(APP, USER, "the vault code")  # the reranker embeds delta lines
    request = f"undo the vault code {SECRET}"
    mem.rollback_to_version_by_nl_query(APP, USER, request, mode="revert")

    count = HashEmbedder().count_tokens
    quoting = [v.descriptor for v in mem.versions(APP, USER) if SECRET in v.descriptor]
    assert quoting
    derived = {content_query(request)}
    for desc in quoting:
        derived.update(split_windows(desc, 6, count))
        derived.update(delta_lines(desc))
    derived = {t for t in derived if SECRET in t}  # texts whose key fingerprints the secret
    keys = {hashlib.sha256(t.encode()).hexdigest() for t in derived}
    assert len(derived) >= 4 and keys <= _cache_keys(cache_file), "all were embedded"

    mem.redact(APP, USER, SECRET, reason="user asked", by="text")
    assert keys.isdisjoint(_cache_keys(cache_file))
    assert keys.isdisjoint(shared_cache(mem.embedder)._vecs)
    for f in (cache_file, Path(f"{cache_file}-wal")):
        assert not f.exists() or SECRET.encode() not in f.read_bytes()
    assert mem.resolve(APP, USER, "the vault code")  # the scrubbed descriptors re-embed
    mem.close()


def test_redact_op_in_a_commit_forgets_the_old_descriptor_windows(tmp_path: Path) -> None:
    from chronobench.systems.stores import EMBEDDING_CACHE_FILE, StoreProvider
    from chronomem.embedders import split_windows

    provider = StoreProvider(embedder="hash", cache_dir=tmp_path / "cache", window_tokens=6)
    mem = provider.new_store()
    ops = [add("job", "Ann is a nurse"), add("vault", f"the vault code is {SECRET} now")]
    mem.commit(APP, USER, ops, source="chat", reason="r")
    (desc,) = [v.descriptor for v in mem.versions(APP, USER) if SECRET in v.descriptor]
    windows = [w for w in split_windows(desc, 6, mem.embedder.count_tokens) if SECRET in w]
    keys = {hashlib.sha256(w.encode()).hexdigest() for w in windows}
    cache_file = tmp_path / "cache" / EMBEDDING_CACHE_FILE
    assert windows and keys <= _cache_keys(cache_file)
    mem.commit(APP, USER, [{"op": "redact", "item_id": "vault"}], source="user", reason="gdpr")
    assert keys.isdisjoint(_cache_keys(cache_file))
    mem.close()


def test_redact_op_in_a_commit_drops_the_in_memory_copies() -> None:
    """A redact op inside a commit drops what redact() drops: S(HEAD)'s cached rows
    and item index, the lexical copy and the episode labels (they may hold the text)."""
    mem = ChronoMem(":memory:", embedder="hash")
    mem.commit(APP, USER, [add("vault", f"the vault code is {SECRET} now")], source="c", reason="r")
    assert mem.search(APP, USER, "vault code", k=3)  # fills the item cache
    assert any(SECRET in repr(entry) for entry in mem._caches.items._by_scope.values())
    mem.commit(APP, USER, [{"op": "redact", "item_id": "vault"}], source="user", reason="gdpr")
    assert not any(SECRET in repr(entry) for entry in mem._caches.items._by_scope.values())
    mem.close()


SELECTIVE_FORGETS = {
    "nl_quotes_a_word": lambda m: m.selective_undo_by_nl_query(
        APP, USER, f"forget my vault code {SECRET}", redact=True, with_dependents="drop"
    ),
    "nl_quotes_the_text": lambda m: m.selective_undo_by_nl_query(
        APP, USER, f"forget that the vault code is {SECRET}", redact=True, with_dependents="drop"
    ),
    "reason_quotes_it": lambda m: m.revert_commits(
        APP, USER, [3], redact=True, reason=f"user: drop the vault code is {SECRET} please"
    ),
}


@pytest.mark.parametrize("case", sorted(SELECTIVE_FORGETS))
def test_a_selective_forget_with_redact_keeps_no_copy_in_its_reason(
    each_backend: str, tmp_path: Path, case: str
) -> None:
    """The request (stored as the version's reason and in the audit rows) is written with
    the erased words redacted, so "forget my code X" does not store X again."""
    path = tmp_path / "s.db"
    mem = _story(None if on_postgres() else path)
    CASES["item"](mem)
    plan = SELECTIVE_FORGETS[case](mem)
    assert plan.new_head is not None and "vault" not in repr(mem.snapshot(APP, USER))
    assert _scan_all_tables(mem) == [] and SECRET not in _api_text(mem)
    reasons = [v.reason or "" for v in mem.versions(APP, USER)]
    assert any("[redacted]" in r for r in reasons), reasons
    assert mem.check_integrity(APP, USER) == []
    mem.close()
    if not on_postgres():
        assert _leaks(path) == []
