"""RQ3's headline, last-session coverage, and its validity audit (docs/metrics.md, RQ3).

The unit tests pin the metric: only the newest restored session's new words count,
less the words the rollback request states, and a leaking summary scores 0. The audit
test runs ``chronobench.tracks.summary.audit`` in its fast version (two LoCoMo conversations):
oracle, error curves and every attack family through the real scorer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chronobench.data.schema import Probe
from chronobench.metrics import last_session_words, score_probe
from data_builders.summaries import budget_question

# Five sessions; v* = 5. Session k's new words are the k-th list.
SESSIONS = [["adopt", "puppi"], ["potteri", "kiln"], ["hike", "canyon"], ["violin"], ["marathon", "medal"]]  # fmt: skip


def _probe(last: list[str] | None, novel: list[list[str]] | None = None) -> Probe:
    meta = {
        "speakers": ["Ann", "Bob"],
        "word_budget": 150,
        "session_words": SESSIONS,
        "novel_words": novel if novel is not None else [["sold", "vase"]],
    }
    if last is not None:
        meta["last_session_words"] = last
    return Probe(
        probe_id="s/q/summary",
        kind="summary",
        question=budget_question(),
        reference="ref",
        meta=meta,
    )


def test_restating_the_first_session_earns_nothing_at_v_star_5() -> None:
    probe = _probe(SESSIONS[4])
    first = score_probe(probe, "Ann adopted a puppy.")
    assert first["last_session_coverage"] == 0.0
    assert first["session_coverage"] == pytest.approx(0.2)  # the old headline paid for it
    # Every early session at once still earns nothing; the newest one is what counts.
    early = score_probe(probe, "puppy adopted pottery kiln hiking canyon violin")
    assert early["last_session_coverage"] == 0.0
    newest = score_probe(probe, "Bob ran a marathon.")
    assert newest["last_session_coverage"] == pytest.approx(0.5)
    assert score_probe(probe, "marathon medal")["last_session_coverage"] == 1.0


def test_a_leaking_summary_scores_zero_and_an_unbuilt_probe_has_no_headline() -> None:
    probe = _probe(SESSIONS[4])
    leaky = score_probe(probe, "marathon medal, then he sold the vase")
    assert leaky["summary_leakage"] == 1.0 and leaky["last_session_coverage"] == 0.0
    # Built before the field existed, or a newest session without new words: no score.
    assert "last_session_coverage" not in score_probe(_probe(None), "marathon medal")
    assert "last_session_coverage" not in score_probe(_probe([]), "marathon medal")


def test_words_the_request_states_are_not_counted() -> None:
    request = "Go back to right after Bob ran his first marathon."
    assert last_session_words(["marathon", "medal"], request, ["Bob"]) == ["medal"]
    assert last_session_words(["medal", "marathon"], "", ["Bob"]) == ["marathon", "medal"]
    probe = _probe(last_session_words(SESSIONS[4], request, ["Ann", "Bob"]))
    # Echoing the request earns nothing; saying what the session adds still does.
    assert score_probe(probe, request)["last_session_coverage"] == 0.0
    assert score_probe(probe, "He won a medal.")["last_session_coverage"] == 1.0


def test_a_paraphrased_request_leaves_its_own_words_out_too() -> None:
    from chronobench.data.schema import RollbackQuery
    from data_builders import paraphrase_queries

    class Scripted:
        name, model = "scripted", "fixed"

        def generate(self, requests: list) -> list[str]:
            return ["Take me back to when Bob won a medal, please."] * len(requests)

    template = "Go back to right after Bob ran his first marathon."
    query = RollbackQuery(
        query_id="s/q",
        stream_id="s",
        text=template,
        intent="restore_to",
        source="template",
        target_version=5,
        probes=[_probe(last_session_words(SESSIONS[4], template, ["Ann", "Bob"]))],
    )
    (out,) = paraphrase_queries([query], Scripted())
    assert out.source == "paraphrase" and out.probes[0].meta["last_session_words"] == []
    assert query.probes[0].meta["last_session_words"] == ["medal"]  # the template's own


def test_built_summary_probes_hold_the_newest_sessions_words_less_the_requests(
    tiny_built,
) -> None:
    from chronobench.metrics.content import content_stems

    checked = 0
    for q in tiny_built.queries:
        for p in q.probes:
            if p.kind != "summary" or "last_session_words" not in p.meta:
                continue
            names = p.meta["speakers"]
            words = set(p.meta["last_session_words"])
            assert not words & content_stems(q.text, tuple(names)), q.query_id
            # A subset of the restored sessions' new words, all from one session.
            assert words <= {w for ws in p.meta["session_words"] for w in ws}
            checked += 1
    assert checked


@pytest.mark.slow  # ~20 s: builds LoCoMo and replays ~80 summaries per policy
def test_fast_rq3_audit_passes(locomo_session_data: Path, tmp_path: Path) -> None:
    from chronobench.audit.registry import AuditOptions
    from chronobench.tracks.summary.audit import audit

    # The LoCoMo build is the session's (built once per test run); the audit only reads it.
    (result,) = audit(AuditOptions(fast=True, data=locomo_session_data, results=tmp_path))
    assert result.passes, result.failures()
    assert {a.family for a in result.attacks} == {
        "request_blind",
        "over_action",
        "fixed_text",
        "surface_rule",
    }
    best = result.best_attacks()
    # The review's construction (first sessions' most frequent first-said words) is at
    # floor level: below the best request-blind restore, far below the oracle.
    assert best["fixed_text"].score < 0.5 * result.oracle
    assert all(c.strictly_decreasing() for c in result.curves)


@pytest.mark.slow  # one oracle summary cell on the tiny fixture (shared with other tests)
def test_the_audits_replay_is_the_oracle_cell(tiny_run, tiny_built) -> None:
    import json

    from chronobench.tracks.summary.audit_texts import SummaryReplay

    folder = tiny_run("task=summary", "system=chronomem_oracle")
    replays = {s.stream_id: SummaryReplay(s) for s in tiny_built.streams}
    rows = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert rows
    for r in rows:
        replay = replays[r["stream_id"]].at(r["gold_version"], r["probe"]["question"])
        assert replay == r["prediction"], r["sample_id"]
