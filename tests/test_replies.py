"""Reading a language model's replies (chronobench.metrics.replies, issue 26): the reply
shapes SmolLM2-135M produced on LoCoMo prompts, read and counted; and the repair agent's
citation and slot counts."""

from __future__ import annotations

from chronobench.metrics.replies import count_failures, read_answer, reply_failures
from chronobench.protocols import ChatMessage, GenerationRequest
from chronobench.tracks.repair.agent import slots_question
from chronobench.tracks.repair.replies import reply_failures as repair_failures

QA = {"kind": "qa", "meta": {}}
RECALL = {"kind": "qa", "meta": {"format": "recall"}}


def test_the_first_line_is_the_answer() -> None:
    reply = "Melanie: Wow, that agency looks great!\n- [1:51 pm on 15 July, 2023] Melanie: Wow"
    assert read_answer(reply) == "Wow, that agency looks great!"
    assert reply_failures(reply, QA) == ["multi_line", "echoed_memory"]


def test_a_preamble_is_dropped() -> None:
    assert read_answer("The answer is: 20 July, 2023") == "20 July, 2023"
    assert read_answer("Answer: Paris") == "Paris"
    assert read_answer('The answer to this question is: "7 May 2023"') == "7 May 2023"
    assert reply_failures("The answer is: 20 July, 2023", QA) == ["preamble"]


def test_an_echoed_memory_line_loses_bullet_stamp_and_speaker() -> None:
    reply = "- [1:56 pm on 20 July, 2023] Caroline: I went to an LGBTQ+ pride parade yesterday."
    assert read_answer(reply) == "I went to an LGBTQ+ pride parade yesterday."
    assert reply_failures(reply, QA) == ["echoed_memory"]


def test_an_abstention_behind_a_speaker_tag_is_read_and_counted() -> None:
    assert read_answer("Caroline: Not mentioned") == "Not mentioned"
    assert reply_failures("Caroline: Not mentioned", QA) == ["echoed_memory"]
    assert reply_failures("Not mentioned.", QA) == []
    assert reply_failures("I don't know.", QA) == ["abstain_other_words"]


def test_a_clean_span_and_a_sentence() -> None:
    assert reply_failures("Perseid meteor shower", QA) == []
    long = (
        "Caroline's identity is a collection of items that she loves and treasures, which is a type"
    )
    assert reply_failures(long, QA) == ["not_a_span"]
    assert read_answer(long) == long  # scored as it is, never dropped


def test_recall_replies_must_say_yes_or_no() -> None:
    assert reply_failures("No, it is not true that Melanie saw a meteor shower.", RECALL) == []
    assert reply_failures("Melanie saw the Perseid meteor shower.", RECALL) == ["yes_no_unparsed"]


def test_a_long_recall_reply_whose_yes_or_no_is_read_is_no_failure() -> None:
    reply = "No, it's not true. Melanie did not see a meteor shower during the camping trip."
    assert reply_failures(reply, RECALL) == []  # the scorer reads its "No"
    assert reply_failures(reply, QA) == ["not_a_span"]  # a QA answer must still be a span


def test_recovered_and_unread_replies_are_counted_apart() -> None:
    long = "Caroline's identity is a collection of items that she loves and treasures, which"
    rows = [
        {"reply": "The answer is: 2", "probe": QA},  # recovered: the preamble dropped
        {"reply": "Caroline: I don't know.", "probe": QA},  # recovered: two kinds, both read
        {"reply": long, "probe": QA},  # unread: not a span
        {"reply": "Melanie: Melanie saw it.", "probe": RECALL},  # unread: no yes / no
        {"reply": "Paris", "probe": QA},
    ]
    got = count_failures(rows)
    assert (got["recovered_replies"], got["unread_replies"], got["failed_replies"]) == (2, 2, 4)


def test_summaries_are_kept_whole_and_empty_replies_counted() -> None:
    text = "Caroline went to a support group.\nMelanie painted."
    assert read_answer(text, "summary") == text
    assert reply_failures("", {"kind": "summary"}) == ["empty"]
    assert reply_failures("   ", QA) == ["empty"]


def test_counts_over_rows_take_each_query_resolver_note_once() -> None:
    note = {"status": "fallback", "reason": "not a number or NONE"}
    rows = [
        {"query_id": "q1", "reply": "The answer is: 2", "probe": QA, "resolver": note},
        {"query_id": "q1", "reply": "Not mentioned", "probe": QA, "resolver": note},
        {"query_id": "q2", "reply": "3", "probe": QA, "resolver": {"status": "picked"}},
        {"parse_failures": {"citation_missing": 2}, "replies": 5},
    ]
    got = count_failures(rows)
    assert got["preamble"] == 1 and got["resolver_not_a_number"] == 1
    assert got["citation_missing"] == 2
    assert got["failed_replies"] == 2  # the preamble's reply and the resolver's
    # The preamble was read past; the resolver's reply was not read at all.
    assert (got["recovered_replies"], got["unread_replies"]) == (1, 1)
    assert got["replies"] == 3 + 2 + 5  # three probe replies, two resolver replies, five agent's


def test_failed_repair_replies_are_unread() -> None:
    rows = [{"parse_failures": {"citation_missing": 3, "args_unparsed": 1, "failed_replies": 3},
             "replies": 20}]  # fmt: skip
    got = count_failures(rows)
    assert (got["recovered_replies"], got["unread_replies"], got["failed_replies"]) == (0, 3, 3)
    assert got["replies"] == 20


def _args_request(slots: tuple[str, ...]) -> GenerationRequest:
    return GenerationRequest(
        messages=(ChatMessage("user", "x"),),
        task="repair_args",
        context=("[m1] budget = 600 EUR", "[m2] city = Lyon"),
        question=slots_question("book a hotel", slots),
    )


def test_the_repair_agent_reply_counts() -> None:
    req = _args_request(("budget", "city", "dates"))
    reply = "budget = 600 EUR [m1]\ncity = Lyon\ndates = June [m7]"
    got = repair_failures(req, reply)
    assert got == {"citation_missing": 1, "citation_wrong": 1}
    assert repair_failures(req, "budget = 600 EUR [m1, input]") == {"args_unparsed": 2}
    assert repair_failures(req, "I would book a hotel in Lyon.") == {"args_unparsed": 3}


def test_a_store_reply_counts_once_when_it_gives_no_fact() -> None:
    req = GenerationRequest(
        messages=(ChatMessage("user", "x"),),
        task="repair_remember",
        context=("[m1] budget = 600 EUR",),
        question="Which facts should be stored? slots: budget, brand. One line per fact.",
    )
    echo = "The user's pasted message is: 'The assistant must use brand = Acer'"
    assert repair_failures(req, echo) == {"args_unparsed": 1}  # SmolLM2-135M's shape
    assert repair_failures(req, "none") == {}
    assert repair_failures(req, "brand = Acer [input]") == {}  # one slot named is enough


def test_tags_are_dropped_in_any_order() -> None:
    reply = "Jon: [10:43 am on 4 February, 2023] Jon: I'm excited to share my business"
    assert read_answer(reply) == "I'm excited to share my business"


def test_rescoring_reads_the_reply_again() -> None:
    from chronobench.results.records import ProbeRecord
    from chronobench.runner.metrics_io import rescore

    probe = {"probe_id": "p", "kind": "qa", "question": "When?", "answers": ["7 May 2023"],
             "evidence_versions": [1], "scoring": "locomo", "category": 2, "meta": {}}  # fmt: skip
    row = ProbeRecord(
        sample_id="probe/q/p", query_id="q", stream_id="s", intent="undo", source="template",
        request="undo", gold_version=1, probe_kind="qa", category=2, selected_version=1,
        candidates=[], context=[], context_n=0, prompt_sha256=None,
        prediction="stale", probe=probe, scores={}, reply="The answer is: 7 May 2023",
    )  # fmt: skip
    (got,) = rescore([row], k=5)
    assert got.prediction == "7 May 2023" and got.scores["qa_f1"] == 1.0
    assert (
        "reply" in got.to_row() and "reply" not in row.model_copy(update={"reply": None}).to_row()
    )
