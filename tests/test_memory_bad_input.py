"""Table-driven bad input over every public ChronoMem method: a clear TypeError/ValueError
naming the argument, and nothing changed."""

from __future__ import annotations

from typing import Any

import pytest

from chronomem import ChronoMem
from tests._memory_fixtures import APP, USER, add, facts_store, on_postgres

pytestmark = pytest.mark.usefixtures("each_backend")  # every test on SQLite and PostgreSQL

OPS = [add("x", "y")]
W = {"source": "s", "reason": "r"}

# (method, args, kwargs, exception, text the message must contain)
CASES: list[tuple[str, tuple, dict, type[Exception], str]] = [
    ("head", (None, USER), {}, TypeError, "app"),
    ("head", (APP, ""), {}, ValueError, "user"),
    ("versions", (APP, 3), {}, TypeError, "user"),
    ("snapshot", (APP, USER, "3"), {}, TypeError, "version"),
    ("snapshot", (APP, USER, True), {}, TypeError, "version"),
    ("search", (APP, USER, None), {}, TypeError, "query"),
    ("search", (APP, USER, "x", "5"), {}, TypeError, "k"),
    ("search", (APP, USER, "x", -1), {}, ValueError, "k"),
    ("search", (APP, USER, "x"), {"mode": "bm25"}, ValueError, "mode"),
    ("resolve", (APP, USER, None), {}, TypeError, "query"),
    ("resolve", (APP, USER, "x"), {"intent": "redo"}, ValueError, "intent"),
    ("resolve", (APP, USER, "x"), {"stage": "sparse"}, ValueError, "stage"),
    ("resolve", (APP, USER, "x"), {"rerank": "no"}, TypeError, "rerank"),
    ("resolve_lexical", (APP, USER, 5), {}, TypeError, "query"),
    ("resolve_dense", (APP, USER, b"x"), {}, TypeError, "query"),
    ("resolve_hybrid", (APP, USER, "x", 2.5), {}, TypeError, "k"),
    ("detect_intent", (None,), {}, TypeError, "query"),
    ("commit", (APP, USER, OPS), {**W, "valid_time": object()}, TypeError, "valid_time"),
    ("commit", (APP, USER, OPS), {**W, "summary": 7}, TypeError, "summary"),
    ("commit", (APP, USER, OPS), {**W, "labels": ["a"]}, TypeError, "labels"),
    ("commit", (APP, USER, OPS), {"source": None, "reason": "r"}, TypeError, "source"),
    ("commit", (APP, USER, "add x"), W, ValueError, "ops"),
    ("commit", (APP, USER, [{"op": "add", "item_id": "", "text": "t"}]), W, ValueError, "item_id"),
    ("commit_many", (APP, USER, {"ops": OPS}), {}, TypeError, "writes"),
    (
        "commit_many",
        (APP, USER, [{**W, "ops": OPS, "valid_time": 3}]),
        {},
        ValueError,
        "valid_time",
    ),
    ("rollback_to_version", (APP, USER, "2"), {}, TypeError, "version_id"),
    ("rollback_to_version", (APP, USER, 2), {"mode": "reset"}, ValueError, "mode"),
    ("rollback_to_version", (APP, USER, 2), {"reason": None}, TypeError, "reason"),
    ("rollback_to_version", (APP, USER, 2), {"expected_head": "5"}, TypeError, "expected_head"),
    ("commit", (APP, USER, [add("x", "y\x00z")]), W, ValueError, "NUL"),
    ("commit", (APP, USER, OPS), {"source": "s\x00", "reason": "r"}, ValueError, "source"),
    ("record_answer", (APP, USER, "Oslo\x00", ["city"]), {}, ValueError, "text"),
    ("rollback_to_version_by_nl_query", (APP, USER, None), {}, TypeError, "query"),
    ("rollback_to_version_by_nl_query", (APP, USER, "undo Rex"), {"k": 0}, ValueError, "k"),
    (
        "rollback_to_version_by_nl_query",
        (APP, USER, "undo Rex"),
        {"preview": 1},
        TypeError,
        "preview",
    ),
    ("rollback_to_version_by_nl_query", (APP, USER, "undo Rex"), {"mode": "x"}, ValueError, "mode"),
    ("plan_rollback_by_nl_query", (APP, USER, 42), {}, TypeError, "query"),
    ("plan_rollback_by_nl_query", (APP, USER, "undo Rex"), {"intent": 1}, ValueError, "intent"),
    ("record_answer", (APP, USER, "Oslo", "city"), {}, TypeError, "used_items"),
    ("record_answer", (APP, USER, None, ["city"]), {}, TypeError, "text"),
    ("record_answer", (APP, USER, "Oslo", [None]), {}, TypeError, "used_items[0]"),
    ("redact", (APP, USER, None), {"reason": "r"}, TypeError, "item_or_text"),
    ("redact", (APP, USER, ""), {"reason": "r"}, ValueError, "item_or_text"),
    ("redact", (APP, USER, "city"), {"reason": 5}, TypeError, "reason"),
    ("redact", (APP, USER, "city"), {"reason": "r", "by": "both"}, ValueError, "by"),
    ("check_integrity", (APP, None), {}, TypeError, "user"),
    ("answers_relying_on_changed", (7, USER), {}, TypeError, "app"),
    ("compact", (APP, [USER]), {}, TypeError, "user"),
    # ids longer than MAX_ID_BYTES (1,024 UTF-8 bytes): the same error on both backends
    ("commit", ("y" * 200_000, "y" * 200_000, OPS), W, ValueError, "app"),
    ("commit", (APP, "é" * 513, OPS), W, ValueError, "user is 1026 bytes"),
    ("commit", (APP, USER, [add("i" * 1025, "t")]), W, ValueError, "ops[0].item_id"),
    ("commit_many", (APP, "u" * 9000, [{**W, "ops": OPS}]), {}, ValueError, "user"),
    ("record_answer", (APP, USER, "Oslo", ["x" * 1025]), {}, ValueError, "used_items[0]"),
    ("search", ("a" * 1025, USER, "x"), {}, ValueError, "app"),
    ("rollback_to_version", (APP, "u" * 1025, 1), {}, ValueError, "user"),
    ("warm_queries", ("where is Rex",), {}, TypeError, "queries"),
    # selective undo (issue 27)
    ("revert_commits", (APP, USER, 3), {}, TypeError, "versions"),
    ("revert_commits", (APP, USER, "3"), {}, TypeError, "versions"),
    ("revert_commits", (APP, USER, []), {}, ValueError, "versions"),
    ("revert_commits", (APP, USER, [3, 3]), {}, ValueError, "versions"),
    ("revert_commits", (APP, USER, [True]), {}, TypeError, "versions[0]"),
    ("revert_commits", (APP, USER, [3]), {"with_dependents": "yes"}, ValueError, "with_dependents"),
    ("revert_commits", (APP, USER, [3]), {"redact": "no"}, TypeError, "redact"),
    ("revert_commits", (APP, USER, [3]), {"preview": 1}, TypeError, "preview"),
    ("revert_commits", (APP, USER, [3]), {"reason": "r\x00"}, ValueError, "reason"),
    ("revert_commits", (APP, USER, [3]), {"expected_head": "5"}, TypeError, "expected_head"),
    ("revert_commits", (APP, USER, [99]), {}, KeyError, "version 99"),
    ("revert_commits", (APP, USER, [0]), {}, ValueError, "empty root"),
    ("revert_commits", (APP, USER, [1]), {}, ValueError, "with_dependents"),  # a later change
    ("revert_commits", (APP, "u" * 1025, [1]), {}, ValueError, "user"),
    ("plan_selective_undo", (APP, USER, None), {}, TypeError, "request"),
    ("plan_selective_undo", (APP, USER, "forget Rex"), {"k": 0}, ValueError, "k"),
    ("plan_selective_undo", (APP, USER, "forget that"), {}, ValueError, "names no content"),
    ("selective_undo_by_nl_query", (APP, USER, b"x"), {}, TypeError, "request"),
    ("selective_undo_by_nl_query", (APP, USER, "forget Rex"), {"preview": 1}, TypeError, "preview"),
    ("selective_undo_by_nl_query", (APP, USER, "forget Rex"), {"redact": 1}, TypeError, "redact"),
    (
        "selective_undo_by_nl_query",
        (APP, USER, "forget Rex"),
        {"with_dependents": 2},
        ValueError,
        "with_dependents",
    ),
    ("warm_queries", (["where is Rex", 3],), {}, TypeError, "queries[1]"),
    ("branch", (APP, USER, 3), {}, TypeError, "name"),
    ("branch", (APP, USER, "b" * 1025), {}, ValueError, "1025 bytes"),
    ("branch", (APP, USER, "b"), {"at": 2.5}, TypeError, "at"),
    ("branch", (APP, USER, "main"), {}, ValueError, "already exists"),
    ("checkout", (APP, USER, None), {}, TypeError, "name"),
    ("checkout", (APP, USER, "nope"), {}, KeyError, "no branch 'nope'"),
    ("branches", (APP, 3), {}, TypeError, "user"),
    ("diff", (APP, USER, 1.5, "main"), {}, TypeError, "a"),
    ("diff", (APP, USER, "main", "nope"), {}, KeyError, "no branch 'nope'"),
    ("merge", (APP, USER, "main"), {}, ValueError, "into itself"),
    ("merge", (APP, USER, "x"), {"strategy": "mine"}, ValueError, "strategy"),
    ("merge", (APP, USER, "x"), {"resolutions": {"a": 1}}, ValueError, "resolutions['a']"),
    ("delete_branch", (APP, USER, "main"), {}, ValueError, "main branch"),
    ("rollback_to_version", (APP, USER, 1), {"keep_as": 5}, TypeError, "keep_as"),
    ("head", (APP, "\x1fbranch\x1f1\x1f1"), {}, ValueError, "reserved"),
]

PUBLIC = sorted(
    n for n in dir(ChronoMem) if not n.startswith("_") and callable(getattr(ChronoMem, n))
)
EXEMPT = {"close", "clone", "scopes", "conn"}  # no arguments to get wrong (clone: tested below)


def test_every_public_method_is_in_the_table() -> None:
    assert set(PUBLIC) - EXEMPT - {c[0] for c in CASES} == set()


@pytest.mark.parametrize(("method", "args", "kwargs", "exc", "names"), CASES)
def test_bad_input_is_a_clear_error(
    method: str, args: tuple, kwargs: dict[str, Any], exc: type[Exception], names: str
) -> None:
    mem, _ = facts_store()
    before = (mem.head(APP, USER), mem.snapshot(APP, USER), mem.conn.total_changes)
    with pytest.raises(exc) as info:
        getattr(mem, method)(*args, **kwargs)
    assert names in str(info.value)
    assert (mem.head(APP, USER), mem.snapshot(APP, USER), mem.conn.total_changes) == before


def test_clone_rejects_an_existing_file(tmp_path) -> None:
    mem, _ = facts_store()
    (tmp_path / "x.db").write_bytes(b"data")
    if on_postgres():  # a server store clones into a schema or database, never a file
        with pytest.raises(ValueError, match="postgresql://"):
            mem.clone(tmp_path / "x.db")
        return
    with pytest.raises(FileExistsError):
        mem.clone(tmp_path / "x.db")


def test_ids_at_the_limit_and_long_words_are_stored_on_both_backends() -> None:
    import secrets

    from chronomem.validate import MAX_ID_BYTES

    mem, _ = facts_store()
    # incompressible ids of exactly the limit (PostgreSQL cannot compress them in its index)
    app, user, item = (secrets.token_hex(MAX_ID_BYTES // 2) for _ in range(3))
    word = secrets.token_hex(6000)  # one 12,000-letter token: stored by digest on PostgreSQL
    vid = mem.commit(app, user, [add(item, f"note {word}")], source="s", reason="r")
    assert mem.snapshot(app, user) == {item: f"note {word}"}
    assert [h.item_id for h in mem.search(app, user, word, 3, mode="lexical")] == [item]
    assert [v for v, _ in mem.resolve_lexical(app, user, word, 3)] == [vid]
    assert mem.record_answer(app, user, "ok", [item]) > 0
