"""Confident NL rollback: plan/preview write nothing, content-free and tied requests refused."""

from __future__ import annotations

import json

import pytest

from chronomem import (
    ChronoMemError,
    RollbackPlan,
    RollbackResult,
    UncertainRequestError,
)
from chronomem.nl import DENSE_FLOOR, content_tokens
from tests._memory_fixtures import APP, USER, add, facts_store, hash_store

pytestmark = pytest.mark.usefixtures("each_backend")  # every test on SQLite and PostgreSQL

CONTENT_FREE = ["*", "(((", '"', "\x00", "🙂🙂🙂", "   ", "\t\n", "undo that", "undo it", "go back"]


def _state(mem) -> tuple:
    return mem.head(APP, USER), mem.snapshot(APP, USER), mem.conn.total_changes


@pytest.mark.parametrize("text", CONTENT_FREE)
def test_content_free_requests_are_refused_and_change_nothing(text: str) -> None:
    mem, _ = facts_store()
    before = _state(mem)
    for mode in ("truncate", "revert"):
        with pytest.raises(UncertainRequestError, match="nothing was changed"):
            mem.rollback_to_version_by_nl_query(APP, USER, text, mode=mode)
    assert content_tokens(text) == [] and _state(mem) == before


def test_error_class() -> None:
    assert issubclass(UncertainRequestError, ChronoMemError)
    assert issubclass(UncertainRequestError, ValueError)


def test_plan_and_preview_write_nothing() -> None:
    mem, vids = facts_store()
    before = _state(mem)
    plan = mem.plan_rollback_by_nl_query(APP, USER, "undo the beagle puppy Rex")
    preview = mem.rollback_to_version_by_nl_query(
        APP, USER, "undo the beagle puppy Rex", preview=True
    )
    assert _state(mem) == before
    assert isinstance(plan, RollbackPlan) and preview == plan
    assert plan.intent == "undo" and plan.matched_version == vids[4]
    assert plan.target_version == vids[3] and plan.discarded_versions == [vids[4]]
    assert 0.0 < plan.confidence <= 1.0 and plan.evidence["lexical"] is True
    assert plan.runner_up is not None and plan.runner_up[0] != plan.target_version
    assert json.loads(json.dumps(plan.to_dict()))["target_version"] == vids[3]


def test_apply_reports_confidence_runner_up_and_discarded() -> None:
    mem, vids = facts_store()
    res = mem.rollback_to_version_by_nl_query(APP, USER, "forget the bank password hunter2")
    assert isinstance(res, RollbackResult)
    assert res.target_version == vids[1] and res.head == vids[1]
    assert res.discarded_versions == vids[2:] and 0 < res.confidence <= 1
    mem2, _ = facts_store()
    res2 = mem2.rollback_to_version_by_nl_query(
        APP, USER, "forget the bank password hunter2", mode="revert"
    )
    assert res2.discarded_versions == [] and res2.head == 6


def test_exact_tie_between_targets_is_refused() -> None:
    mem = hash_store(episode_label=None)
    mem.commit(APP, USER, [add("a", "Ann visited Kyoto")], source="s", reason="r")
    mem.commit(APP, USER, [add("b", "Bob cooked pasta")], source="s", reason="r")
    mem.commit(APP, USER, [add("c", "Ann visited Kyoto")], source="s", reason="r")
    before = _state(mem)
    with pytest.raises(UncertainRequestError, match="ambiguous"):
        mem.rollback_to_version_by_nl_query(APP, USER, "go back to when Ann visited Kyoto")
    assert _state(mem) == before


def test_unrelated_words_without_evidence_are_refused() -> None:
    mem, _ = facts_store()  # hash embedder: unseen words have zero cosine
    with pytest.raises(UncertainRequestError, match="no content word matches"):
        mem.rollback_to_version_by_nl_query(APP, USER, "undo the xylophone quartet")


@pytest.mark.slow
def test_minilm_paraphrase_without_shared_words_is_accepted(minilm) -> None:
    mem, vids = facts_store(minilm)
    plan = mem.plan_rollback_by_nl_query(APP, USER, "undo the part about the new dog")
    assert plan.evidence["lexical"] is False and plan.evidence["cosine"] >= DENSE_FLOOR
    assert plan.target_version == vids[3]
    for text in CONTENT_FREE:
        with pytest.raises(UncertainRequestError):
            mem.plan_rollback_by_nl_query(APP, USER, text)


def test_a_plan_is_not_applied_once_head_has_moved() -> None:
    """Plan, another writer commits, apply: refused cleanly, nothing changed."""
    from chronomem import HeadMovedError

    mem, vids = facts_store()
    plan = mem.plan_rollback_by_nl_query(APP, USER, "undo the beagle puppy Rex")
    assert plan.head == vids[-1]
    mem.commit(APP, USER, [add("car", "Ann bought a red car")], source="s", reason="r")
    before = _state(mem)
    with pytest.raises(HeadMovedError, match="plan again"):
        mem.rollback_to_version(APP, USER, plan.target_version, expected_head=plan.head)
    assert _state(mem)[:2] == before[:2] and mem.check_integrity(APP, USER) == []
    head = mem.rollback_to_version(
        APP, USER, plan.target_version, expected_head=mem.head(APP, USER)
    )
    assert head == plan.target_version
