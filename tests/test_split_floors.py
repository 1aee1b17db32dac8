"""The RQ2 split floors (baselines/split_floors.py) on a hand-made stream."""

from __future__ import annotations

from baselines.question_floors import SessionMatcher
from baselines.split_floors import FalsifierRuleFloor
from chronobench.protocols import ItemChange, Question, StreamWrite
from chronobench.systems.prompts import ABSTAIN_REPLY
from chronobench.systems.registry import NoOptions


def _writes() -> list[StreamWrite]:
    turns = [
        (1, "Ann: I painted the lake at sunrise."),
        (1, "Bob: Lovely, Ann! I tuned my guitar."),
        (2, "Bob: The concert downtown was loud."),
        (3, "Ann: My garden tomatoes are ripe."),
    ]
    return [
        StreamWrite(
            write_id=i,
            timestamp=None,
            changes=(ItemChange("add", f"t{i}", f"[1 May 2023] {text}"),),
            labels={"session": s},
        )
        for i, (s, text) in enumerate(turns, start=1)
    ]


def test_session_matcher_maps_questions_to_sessions():
    m = SessionMatcher(_writes())
    assert m.last == [2, 3, 4]
    assert m.best("Where was the concert?") == 1
    assert m.best("What is ripe in the garden?") == 2
    assert m.best("Xylophone?") is None


def test_falsifier_rule_floor_reads_words_never_said_with_the_subject():
    floor = FalsifierRuleFloor(None, NoOptions())  # type: ignore[arg-type]
    floor.ingest(_writes())

    def answer(text: str) -> str | None:
        return floor.reply(Question("q", text), None).answer

    # "concert" is in the conversation, never in a turn Ann speaks or that names her.
    assert answer("Is it true that Ann went to the concert?") == "No"
    assert answer("Is it true that Ann painted the lake?") == "Yes"
    assert answer("When did Ann paint the lake?") == ABSTAIN_REPLY
