"""Request-blind floors lose the RQ3 headline with separated cluster-bootstrap intervals
(issue 15, docs/metrics.md "Floors").

The floors are the registered ones (:mod:`baselines.restore_floors`, :mod:`baselines.floors`):
their own version choice and source texts, replayed offline on the real LoCoMo build,
because a summary cell over every conversation takes minutes per floor. ChronoMem's
summary path is replayed at each floor's version, and a test checks that replay against
the runner's own oracle cell. RQ2 runs the registered floors through the runner
(tests/test_protocol3.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from baselines.restore_floors import (
    Fraction60Floor,
    Fraction75Floor,
    Fraction90Floor,
    RandomVersionFloor,
    Session1WordsFloor,
    StreamWordsFloor,
    VersionOneFloor,
)

RESTORE = (Fraction60Floor, Fraction75Floor, Fraction90Floor, VersionOneFloor, RandomVersionFloor)
WORDS = 150  # the leading-words floors' default


def _floor_self(stream: Any) -> Any:
    """What the registered floors read of themselves: run seed 0, the stream as the
    ingested digest (the random floor's draw is seeded per stream), its public writes."""
    from chronobench.protocols import public_writes

    return SimpleNamespace(
        ctx=SimpleNamespace(params=SimpleNamespace(seed=0)),
        ingested=SimpleNamespace(digest=stream.stream_id),
        writes=public_writes(stream),
    )


def _restore_version(cls: type, stream: Any, request: str) -> int:
    """The write ``cls`` restores on ``stream`` for ``request`` (its own ``choose``)."""
    me = _floor_self(stream)
    me.fraction = getattr(cls, "fraction", None)  # the fixed-fraction floors' own
    n = stream.n_versions
    return max(0, min(n, int(cls.choose(me, n, request))))


def _leading_words(cls: type, stream: Any) -> str:
    """The summary a leading-words floor answers (its own ``source_texts``)."""
    words = " ".join(cls.source_texts(_floor_self(stream))).split()
    return " ".join(words[:WORDS])


def chronomem_summary(stream: Any, version: int, question: str) -> str:
    """What ChronoMem's summary path answers after restoring ``version`` (truncate mode)
    with the extractive backbone: the restored items in timeline order, spread into the
    6,000-token summary budget, then the reader."""
    from chronobench.backbones.extractive import ExtractiveBackbone
    from chronobench.protocols import GenerationRequest
    from chronobench.systems.base import pack_spread

    key = (stream.stream_id, len(stream.writes), version, question)
    if key not in _SUMMARIES:
        texts = [op.text for w in stream.writes[:version] for op in w.ops if op.text]
        context = tuple(pack_spread(texts, 6000))
        request = GenerationRequest(messages=(), task="summary", context=context, question=question)
        _SUMMARIES[key] = ExtractiveBackbone().generate([request])[0].text
    return _SUMMARIES[key]


_SUMMARIES: dict[tuple[str, int, int, str], str] = {}  # floors share versions


def predictors() -> dict[str, Callable[[Any, Any, Any], str]]:
    """Summary predictors ``(query, probe, stream) -> text``: the oracle and every
    registered request-blind RQ3 floor."""
    out: dict[str, Callable[[Any, Any, Any], str]] = {
        "chronomem_oracle": lambda q, p, s: chronomem_summary(s, q.target_version, p.question),
    }
    for cls in RESTORE:
        out[cls.name] = lambda q, p, s, cls=cls: chronomem_summary(
            s, _restore_version(cls, s, q.text), p.question
        )
    for cls in (Session1WordsFloor, StreamWordsFloor):
        out[f"{cls.name}_{WORDS}"] = lambda q, p, s, cls=cls: _leading_words(cls, s)
    out["floor_session_dates"] = lambda q, p, s: p.meta["floor_texts"]["session_dates"]
    out["floor_generic_words"] = lambda q, p, s: p.meta["floor_texts"]["generic_words"]
    return out


def summary_rows(data: Any, predict: Callable[[Any, Any, Any], str]) -> list[dict[str, Any]]:
    """Scored summary probe rows, shaped as the runner writes them; one prediction per
    distinct (stream, v*, request), reused."""
    from chronobench.metrics import score_probe

    streams = {s.stream_id: s for s in data.streams}
    memo: dict[tuple[str, int, str], str] = {}
    rows = []
    for q in data.queries:
        for p in q.probes:
            if p.kind != "summary":
                continue
            key = (q.stream_id, q.target_version, q.text)
            if key not in memo:
                memo[key] = predict(q, p, streams[q.stream_id])
            rows.append(
                {
                    "kind": "probe",
                    "sample_id": f"probe/{q.query_id}/{p.probe_id}",
                    "query_id": q.query_id,
                    "stream_id": q.stream_id,
                    "gold_version": q.target_version,
                    "intent": q.intent,
                    "source": q.source,
                    "probe_kind": "summary",
                    "category": None,
                    "selected_version": None,
                    "probe": p.model_dump(mode="json"),
                    "prediction": memo[key],
                    "scores": score_probe(p, memo[key]),
                }
            )
    return rows


def _stats(rows: list[dict[str, Any]], *fields: str) -> dict[str, dict[str, Any]]:
    """``fields`` of the runner's own metrics of ``rows`` (one computation for all)."""
    from chronobench.runner.metrics_io import compute_metrics

    every = compute_metrics(rows).probes.all
    return {field: every[field].model_dump() for field in fields}


@pytest.fixture(scope="module")
def locomo_session(locomo_session_built: Any) -> Any:
    """The real LoCoMo build at session granularity (the main job's RQ2/RQ3 data; built
    once per test run, tests/conftest.py)."""
    return locomo_session_built


@pytest.mark.slow
def test_offline_summary_replay_is_the_oracle_cell(tiny_run, tiny_built) -> None:
    folder = tiny_run("task=summary", "system=chronomem_oracle")
    streams = {s.stream_id: s for s in tiny_built.streams}
    rows = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert rows
    for r in rows:
        replay = chronomem_summary(
            streams[r["stream_id"]], r["gold_version"], r["probe"]["question"]
        )
        assert replay == r["prediction"], r["sample_id"]


def test_floor_replay_uses_the_registered_choice(tiny_built) -> None:
    stream = max(tiny_built.streams, key=lambda s: s.n_versions)
    n = stream.n_versions
    assert _restore_version(VersionOneFloor, stream, "undo that") == 1
    assert _restore_version(Fraction60Floor, stream, "x") == max(1, int(0.6 * n + 0.5))
    drawn = {_restore_version(RandomVersionFloor, stream, f"request {i}") for i in range(20)}
    assert drawn <= set(range(1, max(2, n)))
    assert (
        _leading_words(StreamWordsFloor, stream).split()
        == " ".join(op.text for w in stream.writes for op in w.ops if op.text).split()[:WORDS]
    )


@pytest.mark.slow  # real LoCoMo, ~2,000 replayed summaries
def test_rq3_oracle_beats_every_floor_with_separated_intervals(locomo_session: Any) -> None:
    # Each predictor's rows are scored once; both fields come from that one computation.
    both = {
        name: _stats(summary_rows(locomo_session, predict), "last_session_coverage", "rouge1")
        for name, predict in predictors().items()
    }
    stats = {name: fields["last_session_coverage"] for name, fields in both.items()}
    oracle = stats.pop("chronomem_oracle")
    assert oracle["n_clusters"] == 10 and oracle["mean"] > 0.1
    for name, floor in stats.items():
        assert floor["ci_high"] < oracle["ci_low"], (name, floor, oracle)
    # ROUGE-1, the old headline, is what verbatim text wins (why it is no longer one).
    rouge = {name: fields["rouge1"]["mean"] for name, fields in both.items()}
    assert rouge[f"floor_session1_words_{WORDS}"] > rouge["chronomem_oracle"]
