"""A message that asks for no change of memory is refused by both gates, whatever it names
(chronomem/nocontent.py: asks_for_change); a request that asks in other words than a verb
("keep only ...", "your memory should end ...") still acts.

Every message here was written for this file, not taken from a request set.
"""

from __future__ import annotations

import pytest

from chronomem import UncertainRequestError
from chronomem.nocontent import asks_for_change
from tests._memory_fixtures import APP, USER, chat_store

pytestmark = pytest.mark.usefixtures("each_backend")

TRANSCRIPT = [
    "[2 May 2023] Samantha: we watched a hockey game in Toronto last week",
    "[9 May 2023] Melanie: my pottery lessons with the kids are going great",
    "[16 May 2023] Caroline: I got a job at the library downtown, the traffic is awful",
    "[23 May 2023] Caroline: our family trip to the lake was lovely, the weather was perfect",
]


@pytest.fixture()
def mem():
    store, vids = chat_store(TRANSCRIPT, prefix="a")
    yield store, vids
    store.close()


# Small talk that shares words with the memory (traffic, weather, lessons, week).
CHAT = [
    "Long week, and the traffic on the way home was awful. Anyway, thanks for listening.",
    "The weather was perfect for a walk this morning. Speak soon!",
    "I keep meaning to sign up for pottery lessons and never do, ha.",
    "Just got back from the lake, what a day. Talk later!",
    "hmm let me think about the hockey game and get back to you",
]


@pytest.mark.parametrize("text", CHAT)
def test_small_talk_asks_for_nothing_and_is_refused(mem, text: str) -> None:
    assert not asks_for_change(text)
    store, _ = mem
    for call in (store.plan_rollback_by_nl_query, store.plan_selective_undo):
        with pytest.raises(UncertainRequestError, match="asks for no change"):
            call(APP, USER, text)


@pytest.mark.parametrize(
    "text",
    [
        "keep only the chat about the hockey game in Toronto",
        "your memory should end at Caroline's job at the library",
        "make it so you never heard about the pottery lessons",
        "the family trip to the lake should be the last thing you remember",
        "back to the chat where Caroline got the library job",
        "plz fogret the hockey game",  # a misspelt verb is read back first
    ],
)
def test_requests_without_a_request_verb_still_ask(mem, text: str) -> None:
    assert asks_for_change(text)
    store, _ = mem
    assert store.plan_rollback_by_nl_query(APP, USER, text).matched_version is not None
