"""Protocol 3 (issue 24, docs/protocol.md): one question battery per stream, false
recall statements, and a known set no system chooses.

- The battery is drawn without any v*: every query of a stream is labelled from the same
  items, and the runner hands every query the same texts (the spy in
  tests/test_sealed_protocol.py checks what a system receives).
- False statements follow their rule on the real LoCoMo build: the swapped-in word
  occurs with the statement's subject elsewhere but never in the statement's session,
  both words are in the public writes, and neither the construction rule read backwards
  nor a grammar check tells false statements from true ones.
- A system that fails its final questions on purpose gets the same known set and the
  same RC-QA as one that answers them (under protocol 2 it dropped its own mistakes).
- Request-blind policies, the question-density floor and the recall constants score
  below ChronoMem's interval on a slice of real LoCoMo.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from chronobench.protocols import Question, Reply
from chronobench.systems.chronomem import ChronoMemSession, ChronoMemSystem


@pytest.fixture(scope="module")
def locomo_built(locomo_session_built: Any) -> Any:
    return locomo_session_built  # built once per test run (tests/conftest.py)


def test_every_query_is_labelled_from_its_streams_battery(locomo_built: Any) -> None:
    by_stream = {s.stream_id: s for s in locomo_built.streams}
    sides: dict[str, set[str]] = {"before": set(), "after": set()}
    for q in locomo_built.queries:
        battery = {b["id"]: b["question"] for b in by_stream[q.stream_id].meta["battery"]}
        for p in q.probes:
            assert battery[p.meta["battery_id"]] == p.question, p.probe_id
            if p.meta.get("boundary") in sides:
                sides[p.meta["boundary"]].add(p.meta.get("format", "qa"))
    assert sides == {"before": {"qa", "recall"}, "after": {"qa", "recall"}}
    for s in locomo_built.streams:
        items = s.meta["battery"]
        ids = [b["id"] for b in items]
        assert len(ids) == len(set(ids)) and len(items) > 100
        true = [i for i in ids if i.startswith("o") and not i.endswith("-false")]
        false = [i for i in ids if i.endswith("-false")]
        # As many false statements as true ones, and no replacement word twice (a word
        # in many false statements would mark them).
        assert false and len(true) == len(false), s.stream_id
        swaps = [
            f["meta"]["swap"][1].lower()
            for f in locomo_built.pools[s.stream_id]["facts"]
            if f"{f['fact_id']}-false" in false
        ]
        assert len(swaps) == len(set(swaps)), s.stream_id


def test_false_statements_swap_in_a_word_of_the_subject_from_another_session(
    locomo_built: Any, locomo_path: Path
) -> None:
    from chronobench.text import stem
    from data_builders.locomo.falsify import _TOKEN
    from data_builders.locomo.streams import observations

    records = {r["sample_id"]: r for r in json.loads(locomo_path.read_text())}
    checked = 0
    for pool in locomo_built.pools.values():
        rec = records[pool["stream_id"].split("/")[-1]]
        conv = rec["conversation"]
        n_sessions = [
            int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1
        ]
        turns = [(t["speaker"], t["text"]) for n in n_sessions for t in conv[f"session_{n}"]]
        obs = [(sp, text) for n in n_sessions for sp, text, _ in observations(rec, n)]
        public = {t.lower() for _, text in turns for t in _TOKEN.findall(text)}
        for f in pool["facts"]:
            if not f.get("false_statement"):
                continue
            original, word = f["meta"]["swap"]
            subject = f["meta"]["speaker"]
            first = subject.split()[0].lower()
            with_subject = {
                stem(t.lower())
                for sp, text in turns + obs
                if sp == subject or first in [x.lower() for x in _TOKEN.findall(text)]
                for t in _TOKEN.findall(text)
            }
            n = int(f["fact_id"][1:].split(".")[0])
            session = {
                stem(t.lower())
                for text in [t["text"] for t in conv[f"session_{n}"]]
                + [text for _, text, _ in observations(rec, n)]
                for t in _TOKEN.findall(text)
            }
            assert stem(word.lower()) in with_subject, (f["fact_id"], word)
            assert stem(word.lower()) not in session, (f["fact_id"], word)
            assert original.lower() in public and word.lower() in public, f["fact_id"]
            assert f["false_statement"] != f["statement"]
            checked += 1
    assert checked > 500


class _ForgetfulSession(ChronoMemSession):
    """Answers nothing in a session without a rollback (the final questions)."""

    def ask(self, questions: Sequence[Question]) -> list[Reply]:
        if self._work is None:
            return [Reply(q.question_id, answer="Not mentioned.") for q in questions]
        return super().ask(questions)


class SandbaggingChronoMem(ChronoMemSystem):
    """ChronoMem that fails every final question on purpose (protocol 2's hole: its own
    final answers chose which of its probes counted)."""

    name = "test_sandbagger"

    def open_session(self) -> ChronoMemSession:
        return _ForgetfulSession(self, self.resolve)


def _run(system: str, base: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from chronobench.runner.cell import run_cell
    from chronobench.runner.components import resolve_cell
    from tests.test_sealed_protocol import _spec

    spec = _spec(["system=chronomem", f"system.name={system}", "task=qa", "dataset=tiny"], base)
    return run_cell(resolve_cell(spec))


def test_final_answers_choose_no_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronobench.systems.registry import SYSTEMS, register_system

    register_system("test_sandbagger", SandbaggingChronoMem)
    try:
        honest = _run("chronomem", tmp_path, monkeypatch)
        sandbag = _run("test_sandbagger", tmp_path, monkeypatch)
    finally:
        SYSTEMS._entries.pop("test_sandbagger", None)

    def metrics(run: Path) -> dict[str, Any]:
        return json.loads((run / "metrics.json").read_text())["metrics"]["probes"]["all"]

    a, b = metrics(honest), metrics(sandbag)
    # Its final answers differ (every one abstains) ...
    assert b["final_correct"]["mean"] == 0.0 < a["final_correct"]["mean"]
    # ... and choose nothing: the same known set, the same headline.
    assert (honest / "known.json").read_bytes() == (sandbag / "known.json").read_bytes()
    for field in ("rc_qa", "rc_qa_a", "rc_qa_b", "rc_qa_known_a", "rc_qa_known_b"):
        assert a[field] == b[field], field
    manifest = json.loads((sandbag / "manifest.json").read_text())
    assert manifest["protocol"] == 3 and manifest["known_sha256"]


def test_protocol2s_known_rule_would_have_let_it_choose(tmp_path: Path) -> None:
    """Control: scoring the same rows with the system's own final answers (protocol 2)
    moves the headline when the final answers change."""
    from chronobench.metrics.runlevel import run_units

    def row(kind: str, qa_id: str, side: str | None, score: dict[str, float]) -> dict[str, Any]:
        meta = {"qa_id": qa_id, **({"boundary": side} if side else {})}
        return {
            "query_id": "q1",
            "stream_id": "s",
            "gold_version": 2,
            "probe_kind": kind,
            "probe": {"question": qa_id, "meta": meta},
            "scores": score,
        }

    rows = [
        row("qa", "a", "before", {"qa_f1": 1.0}),
        row("qa", "b", "before", {"qa_f1": 0.0}),  # a rollback mistake
        row("future_qa", "c", "after", {"future_abstain": 1.0}),
    ]
    honest = [row("final_qa", x, None, {"final_correct": 1.0}) for x in "abc"]
    sandbag = [row("final_qa", "b", None, {"final_correct": 0.0})] + honest[::2]

    def h(extra: list[dict[str, Any]], known: Any = None) -> float:
        return next(
            u["scores"]["rc_qa"] for u in run_units(rows + extra, known) if "rc_qa" in u["scores"]
        )

    assert h(sandbag) > h(honest)  # protocol 2: the mistake is dropped
    known = {"s": ["a", "b", "c"]}
    assert h(sandbag, known) == h(honest, known)  # protocol 3: it is not


def test_surface_rules_cannot_tell_false_statements_from_true(locomo_built: Any) -> None:
    from chronobench.tracks.rcqa.audit_policies import (
        grammar_says_false,
        stream_facts,
        surface_says_false,
    )

    flags = {True: [0, 0, 0], False: [0, 0, 0]}  # construction rule, grammar, count
    for s in locomo_built.streams:
        pool = locomo_built.pools[s.stream_id]
        starts = sorted(x["first_version"] for x in pool["sessions"])
        facts = stream_facts(s, starts, pool["speakers"])
        by_id = {f["fact_id"]: f for f in pool["facts"]}
        for item in s.meta["battery"]:
            fid = item["id"].removesuffix("-false")
            if fid not in by_id:
                continue
            truth = not item["id"].endswith("-false")
            f = by_id[fid]
            text = f["statement"] if truth else f["false_statement"]
            flags[truth][0] += surface_says_false(text, f["meta"]["speaker"], facts)
            flags[truth][1] += grammar_says_false(text)
            flags[truth][2] += 1
    rate = {t: (a / n, g / n) for t, (a, g, n) in flags.items()}
    assert flags[True][2] == flags[False][2] > 500
    # At chance: each rule flags false statements about as often as true ones.
    assert abs(rate[False][0] - rate[True][0]) < 0.05, rate
    assert abs(rate[False][1] - rate[True][1]) < 0.02, rate


FLOORS = (
    "floor_question_density",
    "floor_restore_random",
    "floor_restore_v1",
    "floor_restore_60",
    "floor_restore_75",
    "floor_restore_90",
    "floor_always_yes",
    "floor_always_no",
    "always_abstain",
    "floor_recall_surface",
    "floor_session_parity",
    "floor_falsifier_rule",
)


@pytest.mark.slow  # real LoCoMo, every conversation, 12 queries each, 11 cells
def test_request_blind_and_question_reading_floors_sit_below_chronomem(
    tmp_path: Path, locomo_session_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronobench.runner.cell import run_cell
    from chronobench.runner.components import resolve_cell
    from tests.test_sealed_protocol import _spec

    def rcqa(system: str) -> dict[str, Any]:
        spec = _spec([f"system={system}", "task=qa", "dataset.limit_queries=12"], tmp_path)
        # The test run's shared LoCoMo build (dataset=locomo_session, the default): the
        # cells find it built and only read it.
        paths = spec.paths.model_copy(update={"data_dir": str(locomo_session_data)})
        run = run_cell(resolve_cell(spec.model_copy(update={"paths": paths})))
        return json.loads((run / "metrics.json").read_text())["metrics"]["probes"]["all"]["rc_qa"]

    ours = rcqa("chronomem")
    assert ours["n_clusters"] == 10 and ours["mean"] > 0.5
    for floor in FLOORS:
        got = rcqa(floor)
        assert got["mean"] < ours["ci_low"], (floor, got, ours)
        if floor.startswith(("floor_always", "always")):
            assert got["mean"] == 0.0, floor
