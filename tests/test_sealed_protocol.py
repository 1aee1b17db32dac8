"""The sealed protocol (issue 15): a system receives exactly what a deployed agent would.

A spy wraps every registered non-oracle system (the peers included) and records
everything the runner hands it, in a real cell (``run_cell`` on the tiny fixture, and on
a MemoryAgentBench fixture): the context it is built with, the writes at ingest, the
request text at rollback, the questions at ask. The test asserts that this is exactly
the stream's public writes, the request text and the stream's question battery, in the
protocol's order (per query: rollback, then the battery; the stream's ``final_qa``
questions once, after its queries, in a session without a rollback), with opaque
question ids; that apart from the request text every query of a stream is handed the
same, byte for byte (protocol 3); that no gold field name, no oracle message and no
answer or reference text the stream does not itself contain reaches the system. Oracles get the target through the oracle channel only; RQ1 selectors get the
public writes and the request texts under opaque ids; repair methods never see a
case's gold.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from chronobench.data.schema import Probe, RollbackQuery, Write
from chronobench.protocols import ItemChange, OracleTarget, Question, StreamWrite, public_writes
from chronobench.systems import is_oracle
from chronobench.systems.registry import SYSTEMS
from chronobench.text import normalize
from tests._spy import SpySystem
from tests.conftest import REPO_ROOT

NON_ORACLES = [n for n in SYSTEMS.names() if not is_oracle(n)]
ORACLES = [n for n in SYSTEMS.names() if is_oracle(n)]
_NEEDS = {"adk_chronomem": "google.adk"}


# ---- what must never reach a system ------------------------------------------------------


def _gold_names(writes_label_keys: set[str]) -> set[str]:
    """Field names of the gold: every RollbackQuery and Probe field but the texts a system
    is given, and every probe meta key the builders write (a key the stream's own write
    labels carry, such as a write's message ids, is stream content)."""
    names = set(RollbackQuery.model_fields) | set(Probe.model_fields)
    names -= {"text", "question", "schema_version"}
    names |= {"qa_id", "options", "adversarial_answer", "asked_at", "floor_texts", "novel_words",
              "sessions", "speakers", "caveat", "dialog_ids", "probe_kind", "gold_version",
              "target", "oracle"}  # fmt: skip
    names -= set(Write.model_fields) | writes_label_keys
    return names


def _walk(obj: Any, keys: set[str], texts: list[str], types: set[type]) -> None:
    """Every key / field name, string and object type inside ``obj``."""
    types.add(type(obj))
    if isinstance(obj, str):
        texts.append(obj)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            keys.add(f.name)
            _walk(getattr(obj, f.name), keys, texts, types)
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            keys.add(str(k))
            _walk(v, keys, texts, types)
    elif isinstance(obj, list | tuple | set | frozenset):
        for v in obj:
            _walk(v, keys, texts, types)
    elif hasattr(obj, "model_fields"):  # a pydantic model (RollbackQuery, Probe, ...)
        for name in type(obj).model_fields:
            keys.add(name)
            _walk(getattr(obj, name), keys, texts, types)


def _gold_texts(query: RollbackQuery) -> list[str]:
    out = [query.anchor or ""]
    for p in query.probes:
        out += [*p.answers, *p.future_answers, p.reference or "", *p.future_references]
        out += [str(p.meta.get("adversarial_answer") or "")]
        out += [str(v) for v in (p.meta.get("floor_texts") or {}).values()]
    return [t for t in out if t.strip()]


def _leaks(handed: list[Any], queries: list[RollbackQuery], allowed: str, label_keys: set[str]):
    """(gold field names, OracleTarget seen, gold texts not in ``allowed``) inside ``handed``."""
    keys: set[str] = set()
    texts: list[str] = []
    types: set[type] = set()
    for obj in handed:
        _walk(obj, keys, texts, types)
    blob = normalize("\n".join(texts))
    allowed_n = normalize(allowed)
    leaked = sorted(
        {
            g
            for q in queries
            for g in _gold_texts(q)
            if normalize(g) and normalize(g) not in allowed_n and normalize(g) in blob
        }
    )
    return sorted(keys & _gold_names(label_keys)), OracleTarget in types, leaked


def test_the_leak_scanner_sees_gold_when_it_is_handed_over() -> None:
    """Control: handing the RollbackQuery (protocol 1) would be caught."""
    q = RollbackQuery(
        query_id="s/restore_to/ev-s2-0",
        stream_id="s",
        text="go back to the cat",
        intent="restore_to",
        source="template",
        target_version=2,
        anchor="Ann adopts a cat named Zorro",
        probes=[Probe(probe_id="p", kind="future_qa", question="pet?", future_answers=["Rex"])],
    )
    names, oracle, leaked = _leaks([q], [q], allowed="", label_keys=set())
    assert {"target_version", "anchor", "kind", "future_answers"} <= set(names)
    assert "Ann adopts a cat named Zorro" in leaked and "Rex" in leaked
    assert _leaks([OracleTarget(2)], [q], "", set())[1]


# ---- running real cells with the spy ---------------------------------------------------


def _spec(overrides: list[str], base: Path) -> Any:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from chronobench.runner.experiment import settable, with_config_path
    from chronobench.spec import spec_from_config

    # The user's config folders too ($CHRONOBENCH_CONFIG_PATH): an installed plug-in
    # system is registered, so its config must be found as the runner finds it.
    args = with_config_path(["experiment=single", *overrides])
    with initialize_config_dir(config_dir=str(REPO_ROOT / "configs"), version_base="1.3"):
        # As the runner composes: a dotted key a config leaves at its default is set.
        cfg = compose(config_name="config", overrides=[settable(a) for a in args])
    d = OmegaConf.to_container(cfg, resolve=True)
    d["paths"] = {
        "results_dir": str(base / "results"),
        "data_dir": str(base / "data"),
        "cache_dir": str(base / "cache"),
    }
    d["progress"] = False
    d["embedder"] = {"model": "hash"}  # fast; what is handed over does not depend on it
    return spec_from_config(d)


def _spy_cell(name: str, base: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str]) -> Any:
    from chronobench.runner.cell import run_cell
    from chronobench.runner.components import Components, resolve_cell

    log: list = []
    contexts: list = []
    real_build = Components.build_system

    def spying(self: Components, ctx: Any) -> SpySystem:
        contexts.append(ctx)
        return SpySystem(real_build(self, ctx), log)

    monkeypatch.setattr(Components, "build_system", spying)
    spec = _spec([f"system={name}", "task=generation", *extra], base)
    cell = resolve_cell(spec)
    run_dir = run_cell(cell)
    data = cell.load_data()
    return log, contexts, data, run_dir


def _sessions(log: list) -> list[list[tuple]]:
    """The log split into sessions (from an open to its close)."""
    out: list[list[tuple]] = []
    for ev in log:
        if ev[0] in ("open_session", "open_oracle_session"):
            out.append([ev])
        elif ev[0] in ("rollback", "ask", "close_session"):
            out[-1].append(ev)
    return out


def _check_handed(name: str, log: list, contexts: list, data: Any) -> None:
    from chronobench.protocols import GenerationParams
    from chronobench.systems.base import SystemContext
    from chronobench.systems.stores import StoreProvider

    # Built with the run's parameters and the shared store provider, nothing else.
    (ctx,) = contexts
    assert type(ctx) is SystemContext and ctx.extra == {}
    assert type(ctx.params) is GenerationParams and isinstance(ctx.stores, StoreProvider)
    assert {f.name for f in dataclasses.fields(ctx)} == {"params", "stores", "extra", "backbone"}
    # The run's backbone only for a system configured to consult it (ChronoMem's resolver).
    assert ctx.backbone is None

    # Only protocol calls: no attribute of the system is read behind the protocol's back.
    assert {ev[0] for ev in log} <= {
        "ingest",
        "open_session",
        "rollback",
        "ask",
        "close_session",
        "close",
    }, f"{name}: {sorted({ev[0] for ev in log})}"

    from chronobench.runner.sealed import stream_questions

    by_stream = data.queries_by_stream()
    ingests = [ev[1] for ev in log if ev[0] == "ingest"]
    assert len(ingests) == len([s for s in data.streams if by_stream.get(s.stream_id)])
    sessions = _sessions(log)
    it = iter(sessions)
    handed: list[Any] = []
    for writes, stream in zip(
        ingests, [s for s in data.streams if by_stream.get(s.stream_id)], strict=True
    ):
        # The stream's public writes, exactly, and nothing but the public types.
        assert isinstance(writes, tuple) and writes == public_writes(stream)
        assert {type(w) for w in writes} == {StreamWrite}
        assert {type(c) for w in writes for c in w.changes} == {ItemChange}
        handed.append(writes)
        stream_text = "\n".join(op.text or "" for w in stream.writes for op in w.ops)
        battery = [text for _, text in stream_questions(stream, 0)]
        queries = by_stream[stream.stream_id]
        final = [p for q in queries for p in q.probes if p.kind == "final_qa"]
        label_keys = {k for w in stream.writes for k in w.labels}
        blind: list[bytes] = []
        for q in queries:
            first = next(it)
            # One session per query: the request, then the stream's whole battery.
            assert first[0] == ("open_session", (), {}), f"{name}: {first[0]}"
            assert [ev[0] for ev in first] == ["open_session", "rollback", "ask", "close_session"]
            assert first[1] == ("rollback", q.text) and type(first[1][1]) is str
            questions: list[Question] = first[2][1]
            assert {type(x) for x in questions} <= {Question}
            assert [x.text for x in questions] == battery
            # Opaque ids: q1, q2, ... in the order asked; nothing of the probe in them.
            assert [x.question_id for x in questions] == [
                f"q{i}" for i in range(1, len(questions) + 1)
            ]
            # What the session was handed, the request text left out, byte for byte.
            blind.append(repr([ev for ev in first if ev[0] != "rollback"]).encode())
            allowed = "\n".join([stream_text, q.text, *battery])
            handed_q = [q.text, questions]
            names, oracle, leaked = _leaks(handed_q, [q], allowed, label_keys)
            assert not names, f"{name}: gold field names handed over: {names}"
            assert not oracle, f"{name}: a non-oracle system got the oracle channel"
            assert not leaked, f"{name}: gold text the stream does not contain: {leaked[:3]}"
            handed += handed_q
        # Apart from the request text, every query of the stream was handed the same.
        assert len(set(blind)) == 1, f"{name}: queries of {stream.stream_id} differ"
        if final:  # once per stream, after its queries: a session with no rollback
            last = next(it)
            assert [ev[0] for ev in last] == ["open_session", "ask", "close_session"]
            asked = last[1][1]
            assert sorted(x.text for x in asked) == sorted(p.question for p in final)
            assert [x.question_id for x in asked] == [f"q{i}" for i in range(1, len(asked) + 1)]
            handed.append(asked)
        # The writes themselves hold no gold field name and no foreign gold text.
        names, oracle, leaked = _leaks([writes], queries, stream_text, label_keys)
        assert not names and not oracle and not leaked, (name, names, leaked[:3])
    assert next(it, None) is None, f"{name}: sessions the runner did not account for"
    assert log[-1] == ("close",)


def test_plug_in_configs_are_found_through_the_user_config_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed plug-in's config lives in a user folder ($CHRONOBENCH_CONFIG_PATH):
    the spy composes it as the runner would (before, the shipped configs only)."""
    (tmp_path / "cfg" / "system").mkdir(parents=True)
    (tmp_path / "cfg" / "system" / "spy_plugin.yaml").write_text("name: always_abstain\n")
    monkeypatch.setenv("CHRONOBENCH_CONFIG_PATH", str(tmp_path / "cfg"))
    spec = _spec(["system=spy_plugin", "task=generation", "dataset=tiny"], tmp_path)
    assert spec.system.name == "always_abstain"


@pytest.mark.parametrize("name", NON_ORACLES)
def test_a_system_receives_only_writes_request_and_questions(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    if name in _NEEDS and importlib.util.find_spec(_NEEDS[name]) is None:
        pytest.skip(f"{name} needs {_NEEDS[name]}")
    log, contexts, data, _ = _spy_cell(name, tmp_path, monkeypatch, ["dataset=tiny"])
    assert data.queries, "the fixture has queries"
    _check_handed(name, log, contexts, data)


def test_memoryagentbench_cells_follow_the_same_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture = REPO_ROOT / "tests" / "fixtures" / "mab" / "Accurate_Retrieval.jsonl"
    log, contexts, data, _ = _spy_cell(
        "chronomem",
        tmp_path,
        monkeypatch,
        [
            "dataset=mab_accurate_retrieval",
            f"dataset.source={fixture}",
            "+dataset.params.chunk_size=40",
        ],
    )
    assert data.queries
    _check_handed("chronomem (MAB)", log, contexts, data)


@pytest.mark.parametrize("name", ORACLES)
def test_oracles_get_the_target_through_the_oracle_channel_only(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    log, _, data, run_dir = _spy_cell(name, tmp_path, monkeypatch, ["dataset=tiny"])
    sessions = _sessions(log)
    oracle_sessions = [s for s in sessions if s[0][0] == "open_oracle_session"]
    assert len(oracle_sessions) == len(data.queries)
    for s, q in zip(oracle_sessions, data.queries, strict=True):
        (target,) = s[0][1]
        assert type(target) is OracleTarget and target.target_version == q.target_version
        assert s[1] == ("rollback", q.text)  # the request text still follows
    # Sessions opened without the channel are the rollback-free final ones.
    for s in sessions:
        if s[0][0] == "open_session":
            assert "rollback" not in [ev[0] for ev in s]
    if name == "chronomem_oracle":
        rows = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
        rows = [r for r in rows if r["probe_kind"] != "final_qa"]  # no rollback there
        assert rows and all(r["selected_version"] == r["gold_version"] for r in rows)


def test_selectors_get_public_writes_and_request_texts_under_opaque_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronobench.runner.cell import run_cell
    from chronobench.runner.components import Components, resolve_cell

    calls: list = []
    real = Components.build_selector

    def spying(self: Components, name: str, stores: Any) -> Any:
        inner = real(self, name, stores)

        class Spy:
            def search(self, writes: Any, queries: Any, top_k: Any) -> Any:
                calls.append((writes, dict(queries), top_k))
                return inner.search(writes, queries, top_k)

        return Spy()

    monkeypatch.setattr(Components, "build_selector", spying)
    spec = _spec(["dataset=tiny", "task=selection"], tmp_path)
    cell = resolve_cell(spec)
    run_cell(cell)
    data = cell.load_data()
    texts = {q.text for q in data.queries}
    assert calls
    for writes, queries, top_k in calls:
        assert writes in [public_writes(s) for s in data.streams]
        assert all(re.fullmatch(r"r\d+", k) for k in queries)
        assert set(queries.values()) <= texts and isinstance(top_k, int)
        names, oracle, leaked = _leaks(
            [writes, queries],
            data.queries,
            "\n".join(
                [*(op.text or "" for s in data.streams for w in s.writes for op in w.ops), *texts]
            ),
            {k for s in data.streams for w in s.writes for k in w.labels},
        )
        assert not names and not oracle and not leaked
