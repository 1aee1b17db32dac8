"""The telling, not a later recall (chronomem/resolve.py: earlier_telling): at session
granularity an event is told in the chat where it happens and recalled in later chats.
When a later chat's one message wins the reranker, and an earlier chat comes close and
scores as high on the request's words, the earlier chat is the one meant."""

from __future__ import annotations

import pytest

from chronomem import ChronoMem
from chronomem.embedders import HashEmbedder
from chronomem.rerank import DeltaReranker
from tests._memory_fixtures import hash_store

# the descriptor lookup is SQL: run on both backends
pytestmark = pytest.mark.usefixtures("each_backend")

TELLING = [
    "Melanie: I signed up for pottery",
    "Caroline: pottery is great",
    "Melanie: pottery calms me",
    "Caroline: a class on Tuesdays?",
]
OTHER = ["Caroline: I went to a support group meeting", "Melanie: that sounds powerful"]
# one message that repeats the request's words: the reranker's best message
RECALL = ["Melanie: the pottery class Melanie told me about", "Caroline: we went camping"]
QUERY = "keep up to the pottery class Melanie told me about"


def _store(chats: list[list[str]]) -> tuple[ChronoMem, list[int]]:
    """One commit per chat, one item per message."""
    mem = hash_store(reranker=DeltaReranker(HashEmbedder()))
    vids = [
        mem.commit("a", "u", [{"op": "add", "item_id": f"c{c}m{i}", "text": t}
                              for i, t in enumerate(chat)], source="chat", reason="t",
                   labels={"session": c})
        for c, chat in enumerate(chats)
    ]  # fmt: skip
    return mem, vids


def test_an_earlier_telling_wins_over_a_later_recall() -> None:
    mem, vids = _store([TELLING, OTHER, RECALL])
    with mem:
        assert mem.resolve("a", "u", QUERY)[0][0] == vids[0]
        plan = mem.rollback_to_version_by_nl_query("a", "u", QUERY, preview=True)
        assert plan.target_version == vids[0]
        # the reranker's pick was the recall: the plan says which chat it set aside
        assert plan.evidence["steps"]["telling"] == {"from": vids[2], "to": vids[0]}
        # the two swapped scores: the margin still shows a close call
        scores = [s for _, s in mem.resolve("a", "u", QUERY)]
        assert scores == sorted(scores, reverse=True)


def test_a_later_chat_is_never_taken_for_the_telling() -> None:
    mem, vids = _store([RECALL, OTHER, TELLING])
    with mem:
        plan = mem.rollback_to_version_by_nl_query("a", "u", QUERY, preview=True)
        assert "telling" not in plan.evidence.get("steps", {})


def test_single_messages_are_left_alone() -> None:
    """At turn granularity a commit is one message: the rule does not apply."""
    mem, vids = _store([[t] for t in TELLING + OTHER + RECALL])
    with mem:
        plan = mem.rollback_to_version_by_nl_query("a", "u", QUERY, preview=True)
        assert "telling" not in plan.evidence.get("steps", {})
