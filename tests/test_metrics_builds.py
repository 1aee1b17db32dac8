"""Issue-9 scoring rules checked on real built probes (the tiny LoCoMo fixture) and with
the real extractive reader: calibrated summary leakage, category-5 choice, future
probe categories and the final-version probes consistent forgetting needs."""

from __future__ import annotations

from typing import Any

import pytest

from chronobench.backbones.extractive import ExtractiveBackbone
from chronobench.data.schema import Probe
from chronobench.metrics import NOT_MENTIONED_OPTION, choice_question, score_probe


@pytest.fixture(scope="module")
def built(tiny_built: Any) -> Any:
    return tiny_built


def _summaries(built: Any) -> list[Probe]:
    return [p for q in built.queries for p in q.probes if p.kind == "summary"]


def test_vstar_reference_does_not_leak_and_final_reference_does(built: Any) -> None:
    probes = [p for p in _summaries(built) if p.meta.get("novel_words")]
    assert probes, "the fixture must have summary probes with eligible post-v* events"
    final = max(_summaries(built), key=lambda p: len(p.reference or ""))
    # The last session's events are not in any reference: add them from the future list.
    everything = "\n".join([final.reference or "", *final.future_references])
    for p in probes:
        assert score_probe(p, p.reference or "")["summary_leakage"] == 0.0
        whole = "\n".join([p.reference or "", *p.future_references])
        assert score_probe(p, whole)["summary_leakage"] == 1.0
        assert score_probe(p, everything)["summary_leakage"] >= 0.9


def test_summary_probes_carry_floor_texts_and_speakers(built: Any) -> None:
    for p in _summaries(built):
        assert p.meta["speakers"] == ["Ada", "Ben"]
        assert set(p.meta["floor_texts"]) == {"session_dates", "generic_words"}
        # Names and dates alone earn nothing on content ROUGE-1.
        dates = p.meta["floor_texts"]["session_dates"]
        assert score_probe(p, dates)["content_rouge1"] == 0.0


def test_future_probes_and_final_probes(built: Any) -> None:
    seen: set[tuple[str, str]] = set()
    finals: set[tuple[str, str]] = set()
    for q in built.queries:
        for p in q.probes:
            if p.kind == "future_qa":
                # LoCoMo QA probes have a category; recall probes (observations) do not.
                assert p.category in (1, 2, 3, 4) or p.meta.get("format") == "recall"
                seen.add((q.stream_id, p.meta["qa_id"]))
            if p.kind == "final_qa":
                key = (q.stream_id, p.meta["qa_id"])
                assert key not in finals, "one final_qa per question and stream"
                finals.add(key)
    # Every future question is asked again at the last version (builder 1.4.0 also asks
    # boundary answerable questions there, for consistent forgetting and A*).
    assert seen and seen <= finals
    assert "future_candidates_skipped" in built.manifest["extra"]
    assert built.manifest["extra"]["final_qa_probes"] == len(finals)


def _cat5(options: list[str]) -> Probe:
    return Probe(
        probe_id="c5",
        kind="qa",
        question=choice_question("What did Ben realize after the recital?", options),
        category=5,
        meta={"options": options},
    )


@pytest.mark.parametrize("reverse", [False, True])
def test_extractive_reader_answers_the_two_way_choice_from_memory(reverse: bool) -> None:
    reader = ExtractiveBackbone()
    options = [NOT_MENTIONED_OPTION, "practice matters most"]
    if reverse:
        options.reverse()
    probe = _cat5(options)
    # Evidence for the adversarial answer, but said by someone else: not Ben's.
    ada = ("[20 March 2023] Ada: After the recital I realized practice matters most.",)
    ben = ("[20 March 2023] Ben: After the recital I realized practice matters most.",)
    right = reader.answer(probe.question, ada)
    assert score_probe(probe, right)["adversarial_acc"] == 1.0, right
    assert score_probe(probe, reader.answer(probe.question, ()))["adversarial_acc"] == 1.0
    wrong = reader.answer(probe.question, ben)
    assert score_probe(probe, wrong)["adversarial_acc"] == 0.0, wrong
