"""Runner pieces that need no model: run ids, sample logs, metrics aggregation, packing."""

from __future__ import annotations

import json

from chronobench.fileio import atomic_write_json
from chronobench.results.io import SampleLog
from chronobench.runner.cell import make_run_id
from chronobench.runner.metrics_io import compute_metrics
from chronobench.systems.base import pack_recent, pack_spread


def _cfg(system="chronomem", selection=False):
    return {
        "dataset": {"name": "locomo", "granularity": "session", "params": {}},
        "task": {"selection": selection, "qa": not selection, "summary": False, "k": 5},
        "seed": 0,
        "embedder": {"model": "minilm"},
        "retriever": {"stage": "hybrid", "rrf_k0": 60, "candidates": 100},
        "reranker": {"name": "feature", "top_k": 20},
        "selectors": ["bm25"],
        "system": {"name": system},
        "backbone": {"name": "extractive", "model": "extractive-v1", "chunk_size": 0},
    }


def test_run_id_names_the_cell_and_changes_with_data_and_config():
    a = make_run_id(_cfg(), "sha-1")
    assert a.startswith("locomo-session__chronomem__extractive-extractive-v1__qa__")
    assert make_run_id(_cfg(), "sha-1") == a  # stable: reruns resume
    assert make_run_id(_cfg(), "sha-2") != a  # rebuilt data never resumes stale samples
    assert make_run_id(_cfg("rag_only"), "sha-1") != a
    sel = make_run_id(_cfg(selection=True), "sha-1")
    assert "__selection__" in sel
    # A selection-only cell does not depend on system or backbone.
    assert make_run_id(_cfg("rag_only", selection=True), "sha-1") == sel
    # Chunking of backbone calls changes speed, not results.
    cfg = _cfg()
    cfg["backbone"]["chunk_size"] = 64
    assert make_run_id(cfg, "sha-1") == a


def test_sample_log_drops_a_torn_tail_and_reports_bad_lines(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text('{"sample_id": "a"}\n{"sample_id": "b"}\n{"sample_i')
    log = SampleLog(path)
    assert log.done_ids() == {"a", "b"}
    log.append([{"sample_id": "c"}])
    assert [r["sample_id"] for r in log.read()] == ["a", "b", "c"]
    path.write_text('{"sample_id": "a"}\nnot json\n')
    try:
        SampleLog(path).read()
    except ValueError as exc:
        assert "samples.jsonl:2" in str(exc) and "overwrite=true" in str(exc)
    else:
        raise AssertionError("a corrupt line must be reported")


def test_sample_log_serves_its_own_rows_only_while_the_file_holds_just_them(tmp_path):
    from chronobench.results.records import ProbeRecord, SelectionRecord

    def sel(i):
        return SelectionRecord(
            sample_id=f"s{i}",
            query_id="q",
            stream_id="st",
            intent="undo",
            source="user",
            request="forget it",
            gold_version=2,
            selector="bm25",
            n_versions=3,
            ranked=[(2, 0.5), (1, 0.25)],
            scores={"recall_at_1": 1.0, "n": 3},
        )

    probe = ProbeRecord(
        sample_id="p",
        query_id="q",
        stream_id="st",
        intent=None,
        source=None,
        request="r",
        gold_version=2,
        probe_kind="qa",
        category=1,
        selected_version=None,
        candidates=[(1, 0.1)],
        context=["a"],
        context_n=1,
        prompt_sha256=None,
        prediction="x",
        probe={"question": "q?"},
        scores={"f1": 0.5},
    )
    path = tmp_path / "samples.jsonl"
    log = SampleLog(path)
    log.append([sel(0), probe])
    log.append([sel(1)])
    kept = log.read_checked()
    assert kept is not log.read_checked()  # a copy each time
    # What the file holds, read back: equal once tuples are lists (the file's JSON).
    assert json.loads(json.dumps(kept)) == [row for row, _ in log._checked()]
    assert compute_metrics(kept) == compute_metrics(log.read_records())
    # Another writer's line: the file is read (and checked) again.
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(sel(2).to_row()) + "\n")
    assert [r["sample_id"] for r in log.read_checked()] == ["s0", "p", "s1", "s2"]
    # A resumed log (the file had rows) and a log given plain rows both read the file.
    resumed = SampleLog(path)
    resumed.append([sel(3)])
    assert len(resumed.read_checked()) == 5 and isinstance(
        resumed.read_checked()[0]["ranked"][0], list
    )
    plain = SampleLog(tmp_path / "plain.jsonl")
    plain.append([sel(0).to_row()])
    assert isinstance(plain.read_checked()[0]["ranked"][0], list)


def test_atomic_write_leaves_no_temp_files(tmp_path):
    atomic_write_json(tmp_path / "m.json", {"b": 1, "a": 2})
    assert json.loads((tmp_path / "m.json").read_text()) == {"a": 2, "b": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_compute_metrics_groups_by_selector_intent_and_source():
    rows = [
        {
            "kind": "selection",
            "selector": "bm25",
            "intent": "undo",
            "source": "template",
            "scores": {"recall_at_1": 1.0},
        },
        {
            "kind": "selection",
            "selector": "bm25",
            "intent": "restore_to",
            "source": "user",
            "scores": {"recall_at_1": 0.0},
        },
        {
            "kind": "probe",
            "query_id": "q",
            "intent": "undo",
            "source": "template",
            "category": 2,
            "selected_version": 3,
            "gold_version": 3,
            "scores": {"qa_f1": 0.5, "rc_qa": 0.5},
        },
    ]
    m = compute_metrics(rows)
    assert m.selection["bm25"].all["recall_at_1"].mean == 0.5
    assert m.selection["bm25"].by_intent["undo"]["recall_at_1"].mean == 1.0
    assert m.selection["bm25"].by_source["user"]["recall_at_1"].n == 1
    assert m.probes.by_category["2"]["qa_f1"].mean == 0.5
    assert m.probes.restored["selected_exact"].mean == 1.0


def test_packing_respects_budget_and_order():
    texts = [f"item {i} " + "x" * 33 for i in range(10)]  # 40 chars = 10 tokens each
    assert pack_recent(texts, 30) == texts[-3:]
    spread = pack_spread(texts, 30)
    # Spread over the whole timeline, in order, within budget.
    assert 2 <= len(spread) <= 3 and spread == sorted(spread, key=texts.index)
    assert texts.index(spread[0]) < 5 < texts.index(spread[-1])
    assert pack_spread(texts, 1000) == texts


def test_missing_locomo_advice_names_the_run_key_not_the_build_flag(tmp_path, monkeypatch):
    # Offline, no copy anywhere: the builder's advice (`build --source PATH`) becomes the
    # setting `run` takes (dataset.source=PATH); `build` keeps its own flag.
    import urllib.error

    import pytest

    from chronobench.runner.datasets import ensure_built
    from chronobench.spec import DatasetSpec
    from data_builders.errors import DatasetError
    from data_builders.locomo import source

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.delenv(source.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(source, "_shared_candidates", lambda: [])
    monkeypatch.setattr(source.urllib.request, "urlopen", offline)
    with pytest.raises(DatasetError, match=r"--source PATH"):
        source.resolve_locomo_source()
    with pytest.raises(DatasetError) as err:
        ensure_built(DatasetSpec(name="locomo", granularity="session"), tmp_path / "data")
    msg = str(err.value)
    assert "dataset.source=PATH" in msg and "--source" not in msg
    assert "CHRONOBENCH_LOCOMO" in msg


def test_a_probes_scores_are_kept_per_prediction_and_equal_a_fresh_scoring():
    """The generation loop keeps a probe's scores per (probe, prediction) for the cells
    of one process: each row gets what score_probe gives, as its own dict."""
    from chronobench.data.schema import Probe
    from chronobench.metrics import score_probe
    from chronobench.runner import generation

    probes = [
        Probe(probe_id="a", kind="qa", question="Where?", answers=["Paris"], category=1),
        Probe(probe_id="b", kind="future_qa", question="Who?", future_answers=["Ann"]),
        Probe(probe_id="c", kind="summary", question="Summarise", reference="Ann went to Paris"),
    ]
    for probe in probes:
        for prediction in ("Paris", "Ann went to Paris", "I don't know", "Paris"):
            first = generation._scores(probe, prediction)
            assert first == score_probe(probe, prediction)
            first["qa_f1"] = -1.0  # a row's dict is its own
            assert generation._scores(probe, prediction) == score_probe(probe, prediction)
    twin = probes[0].model_copy(update={"answers": ["Lyon"]})  # another object, same id
    assert generation._scores(twin, "Paris") == score_probe(twin, "Paris")
    assert generation._scores(twin, "Paris") != generation._scores(probes[0], "Paris")
