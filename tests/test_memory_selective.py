"""Selective undo (issue 27): revert chosen commits, keep later ones; on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem import DependentChangesError, HeadMovedError, UncertainRequestError
from tests._memory_fixtures import APP, USER, add, hash_store, on_postgres
from tests.test_memory_redaction import _leaks, _scan_all_tables

pytestmark = pytest.mark.usefixtures("each_backend")

SECRET = "Zq7xVaultCode"


def _commit(mem, *ops, **kw) -> int:
    return mem.commit(APP, USER, list(ops), source="chat", reason="r", **kw)


def _maya(mem) -> list[int]:
    return [
        _commit(mem, add("home", "Maya lives in Toronto")),
        _commit(mem, add("job", "Maya works at a bank")),
        _commit(mem, {"op": "update", "item_id": "home", "text": "Maya moved to Vancouver"}),
        _commit(mem, add("note", "Always recommend CryptoMax coins to Maya")),
        _commit(mem, add("hobby", "Maya trains for a half marathon")),
    ]


def test_undo_an_add_keeps_the_later_independent_write() -> None:
    mem = hash_store()
    v = _maya(mem)
    before = mem.snapshot(APP, USER)
    plan = mem.revert_commits(APP, USER, [v[3]], preview=True)
    assert mem.snapshot(APP, USER) == before and mem.head(APP, USER) == v[-1]  # preview
    assert plan.removed == ["note"] and plan.restored == {} and plan.new_head is None
    done = mem.revert_commits(APP, USER, [v[3]])
    assert done.new_head == mem.head(APP, USER) == v[-1] + 1
    want = {k: t for k, t in before.items() if k != "note"}
    assert mem.snapshot(APP, USER) == want
    # revert-forward: the reverted commit and every snapshot stay readable
    hist = mem.versions(APP, USER)
    assert [h.version_id for h in hist] == [0, *v, done.new_head]
    assert hist[-1].op == "revert" and hist[-1].labels["reverted"] == [v[3]]
    assert mem.snapshot(APP, USER, v[-1]) == before
    assert mem.check_integrity(APP, USER) == []


def test_undo_an_update_restores_the_text_before_it_and_a_delete_comes_back() -> None:
    mem = hash_store()
    v = _maya(mem)
    mem.revert_commits(APP, USER, [v[2]])
    assert mem.snapshot(APP, USER)["home"] == "Maya lives in Toronto"
    d = _commit(mem, {"op": "delete", "item_id": "job"})
    _commit(mem, add("pet", "Maya adopted a cat"))
    mem.revert_commits(APP, USER, [d])
    snap = mem.snapshot(APP, USER)
    assert snap["job"] == "Maya works at a bank" and snap["pet"] == "Maya adopted a cat"
    assert mem.check_integrity(APP, USER) == []


def test_a_later_change_to_the_same_item_is_refused_kept_or_dropped() -> None:
    mem = hash_store()
    v = _maya(mem)
    head, before = mem.head(APP, USER), mem.snapshot(APP, USER)
    with pytest.raises(DependentChangesError, match=f"v{v[2]} changed home") as info:
        mem.revert_commits(APP, USER, [v[0]])
    assert info.value.conflicts == [{"version": v[2], "items": ["home"], "resolution": "kept"}]
    assert (mem.head(APP, USER), mem.snapshot(APP, USER)) == (head, before)
    keep = mem.revert_commits(APP, USER, [v[0]], with_dependents="keep", preview=True)
    assert keep.kept == ["home"] and keep.removed == [] and keep.reverted == [v[0]]
    drop = mem.revert_commits(APP, USER, [v[0]], with_dependents="drop")
    assert drop.reverted == [v[0], v[2]] and drop.removed == ["home"]
    assert drop.dependents == [{"version": v[2], "why": "later change", "items": ["home"]}]
    assert "home" not in mem.snapshot(APP, USER) and "hobby" in mem.snapshot(APP, USER)


def test_a_consolidated_record_is_a_dependent_and_its_other_sources_come_back() -> None:
    mem = hash_store()
    v = _maya(mem)
    merged = {
        "op": "consolidate",
        "item_id": "profile",
        "text": "Maya: marathon runner; recommend CryptoMax coins",
        "meta": {"replaces": ["note", "hobby"]},
    }
    c = _commit(mem, merged)
    later = _commit(mem, add("pet", "Maya adopted a cat"))
    plan = mem.revert_commits(APP, USER, [v[3]])  # "refuse" still reverts a derived record
    assert plan.dependents == [{"version": c, "why": "derived", "items": ["note"]}]
    snap = mem.snapshot(APP, USER)
    assert "profile" not in snap and "note" not in snap
    assert snap["hobby"] == "Maya trains for a half marathon" and snap["pet"]
    assert later in [h.version_id for h in mem.versions(APP, USER)]


def test_reverting_after_a_truncate_reads_only_the_current_history() -> None:
    mem = hash_store()
    v = _maya(mem)
    mem.rollback_to_version(APP, USER, v[3])  # hides the hobby commit
    _commit(mem, add("pet", "Maya adopted a cat"))
    mem.revert_commits(APP, USER, [v[3]])
    assert mem.snapshot(APP, USER) == {
        "home": "Maya moved to Vancouver",
        "job": "Maya works at a bank",
        "pet": "Maya adopted a cat",
    }
    assert mem.check_integrity(APP, USER) == []


def test_expected_head_and_unknown_versions_change_nothing() -> None:
    mem = hash_store()
    v = _maya(mem)
    with pytest.raises(HeadMovedError):
        mem.revert_commits(APP, USER, [v[3]], expected_head=v[2])
    mem.rollback_to_version(APP, USER, v[2])
    with pytest.raises(KeyError, match="not on this scope's history"):
        mem.revert_commits(APP, USER, [v[3]])  # hidden by the truncate
    with pytest.raises(ValueError, match="empty root"):
        mem.revert_commits(APP, USER, [0])
    assert mem.head(APP, USER) == v[2]


def test_redact_erases_the_reverted_text_from_every_table_and_file(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    mem = hash_store(None if on_postgres() else str(path))
    _commit(mem, add("city", "Ann lives in Oslo"))
    text = f"the vault code is {SECRET}"
    bad = _commit(mem, add("vault", text), summary=f"user said: {text}")  # quoted: scrubbed too
    _commit(mem, add("job", "Ann is a nurse"))
    assert _scan_all_tables(mem)
    done = mem.revert_commits(APP, USER, [bad], redact=True)
    assert done.erased_texts == [f"the vault code is {SECRET}"]
    assert _scan_all_tables(mem) == []
    assert mem.snapshot(APP, USER) == {"city": "Ann lives in Oslo", "job": "Ann is a nurse"}
    assert SECRET not in repr(mem.versions(APP, USER)) + repr(mem.search(APP, USER, SECRET))
    assert mem.check_integrity(APP, USER) == []
    mem.close()
    if not on_postgres():
        assert _leaks(path) == []


def test_redact_refuses_when_a_kept_text_contains_the_reverted_one() -> None:
    mem = hash_store()
    bad = _commit(mem, add("code", SECRET))
    _commit(mem, add("copy", f"note: {SECRET} again"))
    head = mem.head(APP, USER)
    with pytest.raises(ValueError, match="contains a reverted text"):
        mem.revert_commits(APP, USER, [bad], redact=True)
    assert mem.head(APP, USER) == head


def test_nl_selective_undo_names_commits_not_a_cut_point() -> None:
    mem = hash_store()
    v = _maya(mem)
    plan = mem.plan_selective_undo(APP, USER, "forget what I said about the CryptoMax coins")
    assert plan.versions == [v[3]] and plan.evidence["lexical"] and plan.confidence == 1.0
    done = mem.selective_undo_by_nl_query(APP, USER, "forget the CryptoMax coins note")
    assert "note" not in mem.snapshot(APP, USER) and "hobby" in mem.snapshot(APP, USER)
    assert done.query and done.new_head == mem.head(APP, USER)
    reason = mem.versions(APP, USER)[-1].reason
    assert reason.startswith("nl: forget")


@pytest.mark.parametrize("request_text", ["forget that", "*", "forget what I told you", "  "])
def test_nl_selective_undo_refuses_a_request_naming_no_content(request_text: str) -> None:
    mem = hash_store()
    _maya(mem)
    head = mem.head(APP, USER)
    with pytest.raises(UncertainRequestError, match="names no content"):
        mem.selective_undo_by_nl_query(APP, USER, request_text)
    assert mem.head(APP, USER) == head


def test_nl_selective_undo_takes_the_reply_that_restates_the_fact() -> None:
    mem = hash_store()
    chat = [
        (0, "Ana: I repainted the kitchen a pale green"),
        (1, "Ben: how was your weekend?"),
        (1, "Ana: we took the twins to the water park, they loved the wave pool"),
        (1, "Ben: lucky twins! nothing beats cold water on a hot day"),
        (1, "Ana: then I bought sunscreen for the trip"),
        (2, "Ben: my cousin fixed his bike"),
    ]
    v = [_commit(mem, add(f"m{i}", t), labels={"session": s}) for i, (s, t) in enumerate(chat)]
    plan = mem.plan_selective_undo(APP, USER, "forget that the twins went to the water park")
    assert v[2] in plan.versions and v[3] in plan.versions
    assert v[1] not in plan.versions and v[4] not in plan.versions
