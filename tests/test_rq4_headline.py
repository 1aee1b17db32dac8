"""RQ4's headline and required set: what deleting nothing, everything or the gold plus k
extra turns scores; the restating turns found from annotations; the peers' sweep; and the
fast audit through the real harness."""

from __future__ import annotations

from collections import Counter

import pytest

from chronobench.metrics.forgetting import forget_headline, turn_precision, turn_recall
from data_builders import restate

N_TURNS = 500
GOLD = frozenset({40, 41})


def _score(removed: set[int], forget: float, keep: float) -> float:
    got = forget_headline(forget, keep, turn_precision(removed, GOLD), turn_recall(removed, GOLD))
    assert got is not None
    return got


def test_deleting_nothing_scores_zero() -> None:
    assert _score(set(), forget=0.0, keep=1.0) == 0.0


def test_deleting_everything_scores_near_zero() -> None:
    # Every question forgotten, keep collapses, precision is the gold's share of the stream.
    assert _score(set(range(1, N_TURNS + 1)), forget=1.0, keep=0.02) < 0.02
    # Even if the reader kept answering every other question, precision alone holds it down.
    assert _score(set(range(1, N_TURNS + 1)), forget=1.0, keep=1.0) < 4 * len(GOLD) / N_TURNS + 1e-9


def test_the_gold_scores_keep_and_every_extra_random_turn_costs() -> None:
    assert _score(set(GOLD), forget=1.0, keep=1.0) == 1.0
    extra = [7, 300, 123, 451, 88, 260, 19, 402]
    scores = [_score(set(GOLD) | set(extra[:k]), forget=1.0, keep=1.0) for k in range(9)]
    assert all(b < a for a, b in zip(scores, scores[1:], strict=False)), scores
    # One wrong removal costs more than a point; trading it for forget does not pay:
    # a policy that forgets only by deleting a neighbour too scores below the gold.
    assert scores[0] - scores[1] > 0.01
    assert _score(set(GOLD) | {42}, forget=1.0, keep=1.0) < _score(set(GOLD), 1.0, 1.0)


def test_every_missed_required_turn_costs() -> None:
    full = _score(set(GOLD), forget=1.0, keep=1.0)
    half = _score({40}, forget=1.0, keep=1.0)  # no question reads turn 41: recall still falls
    assert half < full and _score({40}, forget=0.0, keep=1.0) == 0.0
    assert forget_headline(1.0, None, 1.0, 1.0) is None  # no keep question: no headline


def _rec() -> dict:
    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1": [{"dia_id": f"D1:{i}", "speaker": "Ann", "text": "x"} for i in range(1, 6)],
        "session_2": [{"dia_id": f"D2:{i}", "speaker": "Bo", "text": "y"} for i in range(1, 4)],
    }
    obs = {
        "session_1_observation": {
            "Ann": [["Ann adopted a grey kitten called Pixel from the shelter.", "D1:2"]]
        },
        "session_2_observation": {
            "Bo": [["Ann's grey kitten Pixel came from the shelter, she says.", "D2:1"]]
        },
    }
    qa = [
        {"question": "Where did Ann adopt Pixel?", "answer": "the shelter", "evidence": ["D1:2"]},
        {"question": "Where was Pixel adopted by Ann?", "answer": "shelter", "evidence": ["D2:3"]},
        {"question": "What colour is Bo's car?", "answer": "red", "evidence": ["D1:5"]},
    ]
    return {"conversation": conv, "observation": obs, "qa": qa}


def test_required_set_adds_restating_observations_qa_evidence_and_echoes() -> None:
    rec = _rec()
    where = {f"D1:{i}": i for i in range(1, 6)} | {f"D2:{i}": 5 + i for i in range(1, 4)}
    texts = {
        1: "Ann: hi",
        2: "Ann: I adopted a grey kitten, Pixel, from the shelter!",
        3: "Bo: A grey kitten from the shelter, Pixel sounds adorable",
        4: "Ann: work is busy",
        5: "Bo: my car is red",
        6: "Bo: so Pixel the grey kitten came from a shelter",
        7: "Ann: yes",
        8: "Ann: the shelter where I adopted Pixel",
    }
    got = restate.required_turns(
        rec, where, frozenset({2}), ["Ann adopted a grey kitten called Pixel from the shelter."],
        ["q0"], texts,
    )  # fmt: skip
    assert got.turns == {2, 3, 6, 8}  # echo D1:3, observation D2:1, same-answer QA D2:3
    assert got.extra_by_route == {"echo": 1, "observation": 1, "qa": 1}
    assert got.questions == {"o2.1", "q1"}
    assert 5 not in got.turns  # an unrelated turn stays


def test_same_fact_needs_share_and_two_words() -> None:
    a = restate.fact_words("Ann adopted a grey kitten", ["Ann"])
    assert restate.same_fact(a, restate.fact_words("a grey kitten was adopted", []))
    assert not restate.same_fact(a, restate.fact_words("kitten", []))


def test_a_peer_is_reported_at_its_best_k_with_the_sweep() -> None:
    from chronobench.metrics.bootstrap import summarise
    from chronobench.tracks.selective.metrics import sweep_metrics

    def row(k: int, head: float, stream: str) -> dict:
        vals = dict.fromkeys(("forget", "leakage", "keep", "keep_after", "keep_other"), 0.5)
        return {**vals, "headline": head, "precision": 0.5, "recall": 0.5, "stream": stream,
                "source": "user", "delete_hits": k}  # fmt: skip

    rows = [row(k, h, s) for k, h in ((1, 0.6), (3, 0.7), (10, 0.2)) for s in ("a", "b")]
    out = sweep_metrics(rows, Counter(), 0, summarise, (1, 3, 10))["rq4"]
    assert out["delete_hits"] == 3 and out["user"]["headline"]["mean"] == pytest.approx(0.7)
    assert set(out["sweep"]) == {"1", "3", "10"}
    assert out["sweep"]["10"]["user"]["mean"] == pytest.approx(0.2)


@pytest.mark.slow
def test_fast_audit_passes_through_the_real_harness() -> None:
    """Two conversations: the oracle is the ceiling, every curve falls, every attack
    family stays below the oracle's own interval (about a minute with warm caches)."""
    from data_builders.locomo.source import resolve_locomo_source

    try:
        resolve_locomo_source(None)
    except Exception:  # noqa: BLE001 - offline without LoCoMo: nothing to audit
        pytest.skip("LoCoMo not found")
    from chronobench.audit.registry import AuditOptions
    from chronobench.tracks.selective.audit import audit

    (got,) = audit(AuditOptions(fast=True))
    assert got.failures() == []
    assert got.oracle >= max(a.score for a in got.attacks)
    assert set(got.best_attacks()) == {"over_action", "request_blind", "surface_rule"}


def test_board_shows_a_peer_at_its_best_k_with_the_sweep_in_order() -> None:
    from types import SimpleNamespace

    from chronobench.results.metrics_file import RunMetrics
    from chronobench.tracks.selective.board import selective_section

    def stat(x: float) -> dict:
        return {"mean": x, "ci_low": x - 0.1, "ci_high": x + 0.1, "n": 4}

    rq = {
        "row": "mem0",
        "delete_hits": 3,
        "sweep": {str(k): {"user": stat(v)} for k, v in ((10, 0.2), (1, 0.4), (3, 0.5))},
        "user": {"anchors": 4, "headline": stat(0.5)},
        "template": {"anchors": 2, "headline": stat(0.4)},
        "required": {"anchors": 6, "grown": 2, "extra_turns": {"echo": 1, "observation": 2}},
    }
    run = SimpleNamespace(run_id="r", finished_at="2026", metrics=RunMetrics(rq4=rq))
    md, _ = selective_section([run])
    assert "k = 3 (1: 40.0, 3: 50.0, 10: 20.0)" in md
    assert "2 of 6 anchors grew; extra turns by route: echo 1, observation 2" in md.replace(
        "\n", " "
    )


def test_the_audit_compares_with_the_published_cell_of_its_own_held_out_set(tmp_path) -> None:
    """A newer cell on other held-out requests (other anchors) is not the one audited."""
    import json

    from chronobench.audit.contract import Interval
    from chronobench.tracks.selective.audit import published_note

    def cell(name: str, heldout: str, when: str, mean: float) -> None:
        folder = tmp_path / "published" / name
        folder.mkdir(parents=True)
        headline = {"mean": mean, "ci_low": mean - 0.1}
        metrics = {
            "metrics": {"rq4": {"row": "chronomem_selective", "user": {"headline": headline}}}
        }
        spec = {
            "dataset": {"name": "locomo", "granularity": "turn"},
            "task": {"params": {"heldout": heldout}},
        }
        (folder / "metrics.json").write_text(json.dumps(metrics))
        (folder / "manifest.json").write_text(json.dumps({"spec": spec}))
        (folder / "volatile.json").write_text(json.dumps({"finished_at": when}))

    audited = {
        "dataset": {"name": "locomo", "granularity": "turn"},
        "task": {"params": {"heldout": "a.jsonl"}},
    }
    interval = Interval(mean=0.72, lo=0.62, hi=0.8)
    assert "no published cell of a.jsonl" in published_note(tmp_path, interval, False, audited)
    cell("ours", "a.jsonl", "2026-01-01", 0.72)
    cell("newer_other_set", "b.jsonl", "2026-02-01", 0.84)
    assert published_note(tmp_path, interval, False, audited) == " (the same as the published ours)"
    cell("newer_ours", "a.jsonl", "2026-03-01", 0.70)
    note = published_note(tmp_path, interval, False, audited)
    assert note == " (DIFFERENT from the published newer_ours)"
    assert published_note(tmp_path, interval, True, audited) == ""
