"""Issue 15 scores on hand-made inputs: boundary windows, recall probes, the budgeted
summary, session coverage and its leakage gate (docs/metrics.md)."""

from __future__ import annotations

import pytest

from chronobench.backbones._summary import budget_summary, spread_order
from chronobench.backbones.extractive import ExtractiveBackbone
from chronobench.data.schema import MemoryOp, Probe, Stream, Write
from chronobench.metrics import score_probe, session_coverage, session_new_words
from chronobench.metrics.qa import affirms, denies
from chronobench.protocols import GenerationRequest
from chronobench.text import first_words, word_budget
from data_builders.probes import (
    PoolFact,
    PoolQA,
    PoolSession,
    ProbePool,
    add_final_probes,
    attach_probes,
    boundary_windows,
    budget_question,
    recall_question,
)


def _pool(**kw: object) -> ProbePool:
    sessions = [
        PoolSession(session=1, date="1 May 2023", events=[], first_version=1, last_version=2),
        PoolSession(session=2, date="8 May 2023", events=[], first_version=3, last_version=4),
        PoolSession(session=3, date="9 May 2023", events=[], first_version=5, last_version=6),
    ]
    # The caps these tests were written against (the pool itself has no defaults).
    caps = {"max_answerable": 3, "max_future": 3, "max_boundary": 0, "max_recall": 0}
    caps |= {"battery_qa": 4, "battery_recall": 2, "battery_adversarial": 1, "seed": 0}
    return ProbePool(stream_id="s", scoring="locomo", sessions=sessions, **(caps | kw))


def test_boundary_windows_are_the_sessions_around_v_star() -> None:
    pool = _pool()
    assert boundary_windows(pool, 4) == ((3, 4), (5, 6))  # session 2 | session 3
    assert boundary_windows(pool, 3) == ((3, 3), (4, 4))  # mid-session: the rest of it
    assert boundary_windows(pool, 0) == (None, (1, 2))  # nothing restored
    assert boundary_windows(pool, 6) == ((5, 6), None)  # nothing after


def _stream() -> Stream:
    texts = [
        "Ann: I adopted a puppy named Biscuit.",
        "Bob: Lovely, dogs are great.",
        "Ann: I started pottery classes downtown.",
        "Bob: Pottery sounds relaxing.",
        "Ann: I sold my first vase at the market.",
        "Bob: Congratulations on the vase!",
    ]
    writes = [
        Write(
            version=i + 1,
            ops=[MemoryOp(op="add", item_id=f"t{i}", text=t)],
            labels={"session": i // 2 + 1},
        )
        for i, t in enumerate(texts)
    ]
    return Stream(stream_id="s", dataset="locomo", granularity="turn", sample_id="x", writes=writes)


def test_boundary_and_recall_probes_sit_on_both_sides_of_v_star() -> None:
    qas = [
        PoolQA(
            qa_id="q1", question="What did Ann adopt?", answers=["a puppy"], category=4, lo=1, hi=1
        ),
        PoolQA(qa_id="q2", question="What class?", answers=["pottery"], category=4, lo=3, hi=3),
        PoolQA(
            qa_id="q3", question="What did she sell?", answers=["a vase"], category=4, lo=5, hi=5
        ),
    ]
    facts = [
        PoolFact(fact_id="o1", statement="Ann started pottery classes downtown.", lo=3, hi=3),
        PoolFact(fact_id="o2", statement="Ann sold her first vase at a market.", lo=5, hi=5),
        # Says nothing the memory before its session lacks: never a recall probe.
        PoolFact(fact_id="o3", statement="Ann adopted a puppy.", lo=4, hi=4),
        PoolFact(
            fact_id="o4",
            statement="Ann glazed pottery classes bowls downtown.",
            false_statement="Ann glazed pottery classes dogs downtown.",
            lo=3,
            hi=3,
        ),
        PoolFact(
            fact_id="o6",
            statement="Ann fired glazed mugs in a kiln.",
            false_statement="Ann fired glazed kittens in a kiln.",
            lo=3,
            hi=4,
        ),
        PoolFact(
            fact_id="o5",
            statement="Ann sold her second bowl at a fair.",
            false_statement="Ann sold her second kettle at a fair.",
            lo=5,
            hi=6,
        ),
    ]
    pool = _pool(qas=qas, facts=facts, max_answerable=0, max_future=0, max_boundary=5, max_recall=5)
    stream = _stream()
    probes = attach_probes(pool, stream, "Q", 4)
    sides = {(p.kind, p.meta["qa_id"], p.meta["boundary"]) for p in probes if p.kind != "summary"}
    assert sides == {
        ("qa", "q2", "before"),
        ("future_qa", "q3", "after"),
        ("qa", "o1", "before"),
        ("qa", "o4-false", "before"),
        ("qa", "o6-false", "before"),
        ("future_qa", "o2", "after"),
        ("future_qa", "o5-false", "after"),
    }
    recall = next(p for p in probes if p.meta["qa_id"] == "o1")
    assert recall.question == "Is it true that Ann started pottery classes downtown?"
    assert recall.answers == ["Yes"] and recall.meta["format"] == "recall"
    false = next(p for p in probes if p.meta["qa_id"] == "o4-false")
    assert false.question == "Is it true that Ann glazed pottery classes dogs downtown?"
    assert false.answers == ["No"] and false.meta["truth"] is False
    # Every probe is a battery item, asked under the battery's text; other v* label the
    # same battery differently.
    from data_builders.battery import stream_battery

    battery = {it.item_id: it.question for it in stream_battery(pool, stream)}
    assert all(battery[p.meta["battery_id"]] == p.question for p in probes)
    later = {(p.kind, p.meta["qa_id"]) for p in attach_probes(pool, stream, "Q2", 6)}
    assert ("qa", "q3") in later and ("qa", "o2") in later
    # Every battery question with a gold answer is asked once more, at the end.
    from chronobench.data.schema import RollbackQuery

    q = RollbackQuery(
        query_id="Q", stream_id="s", text="t", intent="undo", source="user", target_version=4
    )
    q.probes = probes
    assert add_final_probes([q], [pool], [stream]) == 9
    finals = {p.meta["qa_id"] for p in q.probes if p.kind == "final_qa"}
    assert finals == {"q1", "q2", "q3", "o1", "o2", "o3", "o4-false", "o5-false", "o6-false"}


def test_recall_question_lowercases_a_leading_function_word() -> None:
    assert recall_question("The group met twice.") == "Is it true that the group met twice?"
    assert recall_question("Ann paints.") == "Is it true that Ann paints?"


def test_recall_replies_are_read_as_yes_no_or_abstain() -> None:
    assert affirms("Yes, she did.") and affirms("True") and not affirms("Not mentioned.")
    assert denies("No.") and denies("Not mentioned.") and not denies("Yes")
    keep = Probe(
        probe_id="k",
        kind="qa",
        question="Is it true that x?",
        answers=["Yes"],
        meta={"format": "recall"},
    )
    drop = keep.model_copy(update={"kind": "future_qa", "answers": [], "future_answers": ["Yes"]})
    final = keep.model_copy(update={"kind": "final_qa"})
    # A protocol-2 probe (no ``truth``): "No" forgets, as it was scored then.
    assert score_probe(keep, "Yes") == {"recall_acc": 1.0}
    assert score_probe(drop, "Not mentioned.") == {"recall_forget": 1.0, "recall_leak": 0.0}
    assert score_probe(drop, "Yes, it is") == {"recall_forget": 0.0, "recall_leak": 1.0}
    assert score_probe(drop, "No.")["recall_forget"] == 1.0
    assert score_probe(final, "yes")["final_correct"] == 1.0


def test_true_and_false_statements_are_scored_so_no_constant_wins_a_side() -> None:
    def probe(kind: str, truth: bool) -> Probe:
        gold = ["Yes" if truth else "No"]
        return Probe(
            probe_id=f"{kind}{truth}",
            kind=kind,  # type: ignore[arg-type]
            question="Is it true that x?",
            answers=gold if kind != "future_qa" else [],
            future_answers=gold if kind == "future_qa" else [],
            meta={"format": "recall", "truth": truth},
        )

    field = {"qa": "recall_acc", "future_qa": "recall_forget", "final_qa": "final_correct"}
    for constant in ("Yes", "No", "Not mentioned."):
        for kind in ("qa", "future_qa"):
            scores = [score_probe(probe(kind, t), constant)[field[kind]] for t in (True, False)]
            # Kept side: at most one of the pair (chance); forgotten side: only abstaining
            # is right (and abstaining is wrong on the kept side).
            if kind == "qa":
                assert sum(scores) == (0.0 if constant == "Not mentioned." else 1.0), constant
            else:
                assert sum(scores) == (2.0 if constant == "Not mentioned." else 0.0), constant
    assert score_probe(probe("qa", False), "No, never.")["recall_acc"] == 1.0
    assert score_probe(probe("qa", False), "Not mentioned.")["recall_acc"] == 0.0
    assert score_probe(probe("future_qa", False), "No")["recall_leak"] == 1.0
    assert score_probe(probe("future_qa", True), "No")["recall_forget"] == 0.0
    assert score_probe(probe("final_qa", False), "No")["final_correct"] == 1.0


def test_session_new_words_belong_to_the_first_session_that_says_them() -> None:
    memory = [(1, "I adopted a puppy"), (2, "the puppy chewed my pottery"), (3, "a pottery vase")]
    events = [
        (1, ["Ann adopts a puppy."]),
        (2, ["Ann's puppy chews her pottery."]),
        (3, ["Ann makes a vase."]),
    ]
    new = session_new_words(events, memory, ["Ann"])
    # "puppy" is session 1's, "pottery" session 2's; "adopt"/"chew"/"make" are not said
    # in that form ("adopted" stems to "adopt" and is: session 1).
    assert new == {1: ["adopt", "puppi"], 2: ["chew", "potteri"], 3: ["vase"]}
    assert session_coverage("puppy pottery", [new[1], new[2]], ["Ann"]) == pytest.approx(0.5)
    assert session_coverage("anything", [], ["Ann"]) is None


def _summary_probe() -> Probe:
    return Probe(
        probe_id="s",
        kind="summary",
        question=budget_question(3),
        reference="1 May: Ann adopts a puppy.\n8 May: Ann starts pottery.",
        meta={
            "speakers": ["Ann", "Bob"],
            "word_budget": 3,
            "session_words": [["adopt", "puppi"], ["potteri"]],
            "novel_words": [["sold", "vase"]],
            "generic_stems": [],
        },
    )


def test_summary_scores_read_the_word_budget_and_leakage_zeroes_the_headline() -> None:
    probe = _summary_probe()
    assert word_budget(probe.question) == 3 and first_words("a  b c d", 3) == "a b c"
    # Only the first 3 words count: "pottery" comes too late.
    out = score_probe(probe, "adopted puppy today pottery")
    assert out["session_coverage"] == pytest.approx(0.5) and out["summary_leakage"] == 0.0
    # Same coverage, but it tells what came after v* (the sold vase): gated to 0.
    leaky = score_probe(probe, "puppy pottery vase")
    assert leaky["summary_leakage"] == 1.0 and leaky["session_coverage"] == 0.0


def test_budget_summary_spreads_over_dates_and_keeps_the_budget() -> None:
    context = tuple(
        f"[{d} May, 2023] Ann: {text}"
        for d, text in (
            (1, "I adopted a playful puppy named Biscuit yesterday."),
            (2, "My pottery teacher showed me glazing techniques."),
            (3, "We hiked the canyon trail with friends."),
            (4, "I sold a blue vase at the weekend market."),
        )
    )
    text = budget_summary(context, 20)
    assert len(text.split()) <= 20
    assert "vase" in text  # the latest session is always in
    assert "puppy" in text  # then the earliest
    assert spread_order(5) == [4, 0, 2, 1, 3]
    reader = ExtractiveBackbone()
    asked = reader.generate(
        [
            GenerationRequest(
                messages=(), task="summary", context=context, question=budget_question(20)
            )
        ]
    )[0].text
    assert asked == text
    # Without a stated budget the reader answers as before (cached calls stay valid).
    plain = GenerationRequest(messages=(), task="summary", context=context, question="Summarise.")
    assert reader.generate([plain])[0].text == reader.summarise(context)
