"""The board's section "small language models on CPU" (``experiment=llm_cpu``).

Its runs (a packaged model's backbone, or a stated dataset subset) never share a table
with the main job's: they answer a fixed subset, so their n differ. The section states
the model, its size and licence, the subset and every parse failure; tokens per second
and wall time change on every rerun and live in a volatile file (:data:`SPEED_FILE`),
written beside the board and never byte-compared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chronobench.leaderboard.tables import count_cell, md_table, stat_cell
from chronobench.metrics.catalog import main_metric
from chronobench.results.metrics_file import RunMetrics

SPEED_FILE = "LLM_CPU_SPEED.md"
_SHOWN = ("multi_line", "preamble", "echoed_memory", "not_a_span", "abstain_other_words",
          "yes_no_unparsed", "empty", "resolver_not_a_number", "citation_missing",
          "citation_wrong", "args_unparsed")  # fmt: skip
_RQ2 = (("rc_qa", "RC-QA"), ("rc_qa_a", "A*"), ("rc_qa_b", "B*"), ("qa_f1", "A: F1"),
        ("future_abstain", "B: abstains"), ("future_leak", "leakage"),
        ("recall_acc", "recall yes/no"), ("rouge1", "summary R-1"))  # fmt: skip


def _model_line(backbones: set[str]) -> list[str]:
    from chronobench.backbones.packaged import PACKAGED

    out = []
    for name in sorted(backbones):
        m = PACKAGED.get(name)
        if m is None:
            continue
        out.append(
            f"Model: **{m.label.replace(' (CPU)', '')}** ({m.parameters} parameters, licence "
            f"{m.licence}), from the PyPI wheel `{m.requirement}` (sha256 "
            f"`{m.wheel_sha256[:12]}...`, a Q4_1 GGUF dequantised to float32) through the "
            "transformers backbone, greedy, one prompt at a time."
        )
    return out


def _failures(metrics: RunMetrics) -> str:
    pf = metrics.parse_failures or {}
    return f"{int(pf.get('failed_replies', 0))} / {int(pf.get('replies', 0))}" if pf else "–"


def _subset(r: Any) -> str:
    s = r.subset or {}
    if not s:
        return "–"
    streams = s.get("streams") or "all"
    return f"first {s.get('queries_per_stream')} per conversation, {streams} conversations"


def small_llm_section(runs: list[Any]) -> tuple[str, list[str]]:
    """The section's Markdown and the run ids it names, from the current small-LLM runs."""
    if not runs:
        return "", []
    newest: dict[tuple[str, ...], Any] = {}
    for r in runs:  # oldest first: the newest run of a cell stands
        key = (r.task_kind, r.queries, r.system or "", r.repair_method or "", r.backbone or "")
        newest[key] = r
    chosen = sorted(newest.values(), key=lambda r: r.run_id)
    backbones = {r.backbone_name for r in chosen if r.backbone_name}
    lines = [
        "## Small language models on CPU",
        "",
        "These rows show the harness end to end on a small model: prompts, the call cache,",
        "answers read from generated text, abstention, ChronoMem's backbone request resolver",
        "and the repair agent's citations. They are **not** the paper's 7-8B results, which",
        "need `scripts/gpu_check.sh` / vLLM on a GPU. Greedy float32 decoding may flip tokens",
        "on another CPU, so these figures are volatile across machines: `experiment=llm_cpu`",
        "sets `reproducible: false` and is kept out of the byte-identity check. Tokens per",
        f"second and wall time: [{SPEED_FILE}]({SPEED_FILE}) (volatile, rewritten by every",
        "rebuild that finds new runs). Replies not read as asked: a model's replies that",
        "showed at least one parse failure, counted by kind below (a reply can show several)",
        "and never dropped (docs/llm_cpu.md).",
        "",
        *_model_line(backbones),
        "",
    ]
    gen = [r for r in chosen if r.task_kind == "benchmark" and r.system and r.queries == "built"]
    if gen:
        lines += ["### RQ2 / RQ3 on the stated subset (x100, [95% CI over conversations])", ""]
        rows = []
        for r in gen:
            probes = r.metrics.probes
            a = probes.all if probes is not None else {}
            restored = (probes.restored or {}).get("selected_exact") if probes else None
            rows.append(
                [
                    _label(r.system),
                    _subset(r),
                    count_cell(a.get("rc_qa")),
                    count_cell(a.get("qa_f1")),
                ]
                + [stat_cell(a.get(f)) for f, _ in _RQ2]
                + [stat_cell(restored, ci=False), _failures(r.metrics)]
            )
        head = [
            "method",
            "subset",
            "queries n / distinct / clusters",
            "A probes n / distinct / clusters",
        ]
        lines += md_table(
            [*head, *[h for _, h in _RQ2], "restored = v*", "replies not read as asked / replies"],
            rows,
        )
    rq1 = [r for r in chosen if r.task_kind == "benchmark" and r.queries != "built"]
    if rq1:
        lines += _rq1(rq1)
    repair = [r for r in chosen if r.task_kind == "repair"]
    if repair:
        lines += ["### Repair with the LLM agent (controlled cases, the given diagnosis)", "",
                  "A case whose fault never reached memory (the model stored nothing from the "
                  "fault's session) has nothing to repair: it is counted as not applicable and "
                  "left out of the figures, not scored 0.", ""]  # fmt: skip
        rows = []
        for r in repair:
            a = r.metrics.all or {}
            recovery, calls = a.get("recovery"), a.get("backbone_calls")
            moot = int((r.metrics.not_applicable or {}).get("n", 0))
            scored = recovery.n if recovery else 0
            rows.append(
                [str(r.repair_method), str(scored + moot), str(moot)]
                + [stat_cell(a.get(f), ci=False) for f in ("recovery", "replay_ratio")]
                + [f"{calls.mean:.1f}" if calls and calls.mean is not None else "–",
                   _failures(r.metrics)]
            )  # fmt: skip
        lines += md_table(["method", "cases", "not applicable (no fault reached memory)", "recovery",
                            "replay ratio", "repair calls per case",
                            "replies not read as asked / replies"], rows)  # fmt: skip
    lines += _failure_table(chosen)
    return "\n".join(lines) + "\n", [r.run_id for r in chosen]


def _label(system: str | None) -> str:
    from chronobench.systems.registry import SYSTEMS

    base = str(system).replace("+resolver", "")
    label = SYSTEMS.label(base) if base in SYSTEMS else base
    return label + (" + backbone resolver" if str(system).endswith("+resolver") else "")


def _rq1(runs: list[Any]) -> list[str]:
    lines = [
        "### RQ1 with ChronoMem's backbone request resolver (hand-written held-out requests)",
        "",
    ]
    rows = []
    for r in runs:
        if r.system:  # a generation cell: what the system restored
            probes = r.metrics.probes
            st = (probes.restored or {}).get("selected_exact") if probes else None
            rows.append(
                [_label(r.system), _subset(r), count_cell(st), stat_cell(st), _failures(r.metrics)]
            )
        for name, groups in sorted(r.metrics.selection.items()):
            if name not in ("chronomem", "bm25_rules"):
                continue
            st = groups.all.get(main_metric("selection").name)
            rows.append(
                [f"selector {name} (no LLM)", _subset(r), count_cell(st), stat_cell(st), "–"]
            )
    lines += md_table(["selector", "subset", "n / distinct / clusters", "R@1",
                        "replies not read as asked / replies"], rows)  # fmt: skip
    return lines


def _failure_table(runs: list[Any]) -> list[str]:
    rows = []
    for r in runs:
        pf = r.metrics.parse_failures
        if not pf:
            continue
        name = r.system or r.repair_method or r.task_kind
        rows.append([f"{_label(name)} ({r.queries})" if r.system else str(name),
                     str(pf.get("replies", 0))] + [str(pf.get(k, 0)) for k in _SHOWN])  # fmt: skip
    if not rows:
        return []
    lines = ["### Parse failures by kind", ""]
    return lines + md_table(["run", "replies", *_SHOWN], rows)


def write_speed(results_dir: Path, runs: list[Any]) -> None:
    """``LLM_CPU_SPEED.md``: tokens per second and wall time of the section's runs, from
    their ``volatile.json`` (volatile: never byte-compared)."""
    from chronobench.fileio import atomic_write_text
    from chronobench.results.schema import VOLATILE_FILE

    rows = []
    for r in sorted(runs, key=lambda r: r.run_id):
        path = Path(r.folder) / VOLATILE_FILE
        if not path.is_file():
            continue
        vol = json.loads(path.read_text(encoding="utf-8"))
        calls = vol.get("backbone_calls") or {}
        secs = float(calls.get("generate_s") or 0.0)
        tokens = int(calls.get("prompt_tokens") or 0) + int(calls.get("completion_tokens") or 0)
        done = int(calls.get("completion_tokens") or 0)
        rows.append([
            f"`{r.run_id}`",
            str(calls.get("misses", "–")), str(calls.get("hits", "–")),
            f"{tokens / secs:.0f}" if secs else "–", f"{done / secs:.1f}" if secs else "–",
            f"{secs:.0f}", f"{float((vol.get('timings') or {}).get('total_s') or 0):.0f}",
        ])  # fmt: skip
    if not rows:
        return
    text = "\n".join(
        [
            "# Small language models on CPU: speed (volatile)",
            "",
            "Rewritten by `python -m chronobench leaderboard` from each run's `volatile.json`;",
            "it changes on every rerun and is never byte-compared. Generated = model calls",
            "(call-cache misses); cached = prompts answered from the call cache (shared",
            "between sessions and systems). Tokens per second count prompt and generated",
            "tokens over the seconds spent in the model; the cell's wall time includes",
            "retrieval, the known set and scoring.",
            "",
            *md_table(
                [
                    "run",
                    "generated",
                    "cached",
                    "tokens/s (prompt + new)",
                    "new tokens/s",
                    "model s",
                    "cell wall s",
                ],
                rows,
            ),  # fmt: skip
        ]
    )
    atomic_write_text(Path(results_dir) / SPEED_FILE, text.rstrip("\n") + "\n")
