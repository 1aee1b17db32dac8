"""The board's section "small language models on CPU" (``experiment=llm_cpu``).

Its runs (a packaged model's backbone, or a stated dataset subset) never share a table
with the main job's: they answer a fixed subset, so their n differ. The section states
the model, its size and licence, the subset and every parse failure; tokens per second
and wall time change on every rerun and live in a volatile file (:data:`SPEED_FILE`),
written beside the board and never byte-compared.

This module lays out the section and its tables. The lines saying where a model's
replies came from (:mod:`.board_provenance`), the sentences comparing systems
(:mod:`.board_separation`) and the speed file (:mod:`.board_speed`) live in modules of
their own, each with the runs' files it reads.
"""

from __future__ import annotations

from typing import Any

from chronobench.leaderboard.tables import count_cell, md_table, stat_cell
from chronobench.metrics.catalog import main_metric
from chronobench.metrics.replies import RECOVERED_KINDS
from chronobench.results.metrics_file import RunMetrics
from chronobench.tracks.small_llm.board_provenance import (
    decoding_phrase,
    model_line,
    model_of,
    reply_runtimes,
    runtime_phrase,
)
from chronobench.tracks.small_llm.board_separation import (
    known_lines,
    probe_stats,
    rcqa_separation,
    rq3_separation,
    system_label,
    without_same_prompts,
)
from chronobench.tracks.small_llm.board_speed import SPEED_FILE, write_speed

# What the board (chronobench.leaderboard.build) and the tests import from here, whichever
# module of the section now defines it.
__all__ = ["SPEED_FILE", "model_of", "runtime_phrase", "small_llm_section", "write_speed"]

_SHOWN = ("multi_line", "preamble", "echoed_memory", "not_a_span", "abstain_other_words",
          "yes_no_unparsed", "empty", "resolver_not_a_number", "citation_missing",
          "citation_wrong", "args_unparsed")  # fmt: skip
_RQ2 = (("rc_qa", "RC-QA"), ("rc_qa_a", "A*"), ("rc_qa_b", "B*"), ("qa_f1", "A: F1"),
        ("future_abstain", "B: abstains"), ("future_leak", "leakage"),
        ("recall_acc", "recall yes/no"), ("rouge1", "summary R-1"))  # fmt: skip
# RQ3 cells of their own (a summary token limit apart from the answers'): the main
# board's RQ3 measures, its headline first.
_RQ3 = (("last_session_coverage", "last-session coverage"), ("session_coverage",
        "session coverage"), ("rouge1", "R-1"), ("content_rouge1", "content R-1"),
        ("specific_rouge1", "specific R-1"), ("summary_leakage", "summary leakage"))  # fmt: skip


def _failures(metrics: RunMetrics) -> str:
    """``recovered + unread / replies``: a recovered reply was read as it meant (a first
    line, a dropped tag, an abstention in other words), an unread one was scored as it
    stood; runs scored before the split show the total only."""
    pf = metrics.parse_failures or {}
    if not pf:
        return "–"
    replies = int(pf.get("replies", 0))
    if "recovered_replies" not in pf:
        return f"{int(pf.get('failed_replies', 0))} (not split) / {replies}"
    rec, unread = int(pf.get("recovered_replies", 0)), int(pf.get("unread_replies", 0))
    other = int(pf.get("failed_replies", 0)) - rec - unread  # the resolver's, a repair row's
    tail = f" + {other} other" if other > 0 else ""
    return f"{rec} + {unread}{tail} / {replies}"


def _subset(r: Any) -> str:
    s = r.subset or {}
    if not s:
        return "–"
    streams = s.get("streams") or "all"
    return f"first {s.get('queries_per_stream')} per conversation, {streams} conversations"


def _task_part(r: Any) -> str:
    """What a run answered, as its id says (``qa``, ``summary``, ``qa+summary``; ``repair``
    ...): a system's summary-only cell is a row apart from its QA cell, never its newer
    version."""
    parts = str(r.run_id).split("__")
    return parts[-2] if len(parts) >= 3 else ""


def _summaries_only(r: Any) -> bool:
    return _task_part(r) == "summary"


def small_llm_section(runs: list[Any]) -> tuple[str, list[str]]:
    """The section's Markdown and the run ids it names, from the current small-LLM runs:
    one part per model (the smoke model last), each with its known set."""
    if not runs:
        return "", []
    newest: dict[tuple[str, ...], Any] = {}
    for r in runs:  # oldest first: the newest run of a cell stands
        # The model and backbone name too: a repair run's id and record name neither, and
        # each model's repair row is its own cell.
        key = (model_of(r), r.task_kind, r.queries, r.system or "", r.repair_method or "",
               r.backbone_name or r.backbone or "", _task_part(r))  # fmt: skip
        newest[key] = r
    by_model: dict[str, list[Any]] = {}
    for r in sorted(newest.values(), key=lambda r: r.run_id):
        by_model.setdefault(model_of(r), []).append(r)
    lines = [
        "## Small language models on CPU",
        "",
        "These rows show the harness end to end on small models: prompts, the call cache,",
        "answers read from generated text, abstention, ChronoMem's backbone request resolver",
        "and the repair agent's citations. They are **not** the paper's 7-8B results, which",
        "need `scripts/gpu_check.sh` / vLLM on a GPU. Greedy decoding (float32 for SmolLM2,",
        "bfloat16 for Qwen) may flip tokens on another CPU. SmolLM2's preset runs the model",
        "live, so its figures are volatile across machines: it sets `reproducible: false`",
        "and is kept out of the byte-identity check. Qwen's preset replays the replies",
        "committed in `results/completions/` (written once by `chronobench generate`), so a",
        "fresh clone reproduces its figures byte for byte on any CPU and `verify` checks",
        "them. Tokens per second and wall time:",
        f"[{SPEED_FILE}]({SPEED_FILE}) (volatile, rewritten by every rebuild that finds new",
        "runs). Replies not read as asked: recovered (the reader dropped a second line, a",
        "preamble or an echoed memory tag, or read an abstention in other words: what it",
        "scored is what the reply meant) + unread (scored as it stood: too long for a span,",
        "a recall reply without yes / no, empty), by kind below; a recall reply whose yes /",
        "no is read is not a failure, and no reply is dropped (docs/llm_cpu.md).",
        "",
    ]
    named: list[str] = []
    # The smoke model (SmolLM2, CI's) after the models the section is about.
    for model in sorted(by_model, key=lambda m: (m == "smollm2", m)):
        chosen = by_model[model]
        named += [r.run_id for r in chosen]
        lines += _model_part(model, chosen)
    return "\n".join(lines).rstrip("\n") + "\n", sorted(named)


def _model_part(model: str, chosen: list[Any]) -> list[str]:
    from chronobench.backbones.packaged import MODELS

    label = MODELS[model].label.replace(" (CPU)", "") if model in MODELS else model
    backbones = {r.backbone_name for r in chosen if r.backbone_name}
    runtime = runtime_phrase(list(reply_runtimes(chosen).values()))
    lines = [
        f"### {label}",
        "",
        *model_line(model, backbones, decoding_phrase(chosen), runtime),
        "",
    ]
    built = [r for r in chosen if r.task_kind == "benchmark" and r.system and r.queries == "built"]
    gen = [r for r in built if not _summaries_only(r)]
    rq3 = {r.system: r for r in built if _summaries_only(r)}
    shown, prompt_only_note = without_same_prompts(gen)
    # A prompt-only row left out leaves the failure table too.
    chosen = [r for r in chosen if r in shown or r not in gen]
    gen = shown
    rq3_rows = [rq3[r.system] for r in gen if r.system in rq3]
    rq3_rows += [r for r in rq3.values() if r not in rq3_rows]
    if gen:
        lines += known_lines(gen)
        lines += rcqa_separation(gen)
        if prompt_only_note:
            lines += [prompt_only_note, ""]
        lines += [f"#### RQ2 / RQ3 on the stated subset, {label} (x100, [95% CI over "
                  "conversations])", ""]  # fmt: skip
        rows = []
        for r in gen:
            probes = r.metrics.probes
            a = dict(probes.all) if probes is not None else {}
            restored = (probes.restored or {}).get("selected_exact") if probes else None
            if a.get("rouge1") is None and r.system in rq3:  # its summaries' own cell
                a["rouge1"] = probe_stats(rq3[r.system]).get("rouge1")
            rows.append(
                [
                    system_label(r.system),
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
            [*head, *[h for _, h in _RQ2], "restored = v*", _FAILED_HEAD],
            rows,
        )
    if rq3_rows:
        lines += _rq3(rq3_rows, label)
    rq1 = [r for r in chosen if r.task_kind == "benchmark" and r.queries != "built"]
    if rq1:
        lines += _rq1(rq1, label)
    repair = [r for r in chosen if r.task_kind == "repair"]
    if repair:
        lines += [f"#### Repair with the LLM agent, {label} (controlled cases, the given "
                  "diagnosis)", "",
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
                            "replay ratio", "repair calls per case", _FAILED_HEAD], rows)  # fmt: skip
    lines += _failure_table(chosen, label, rq3_rows)
    return lines


_FAILED_HEAD = "replies not read as asked: recovered + unread / replies"


def _rq3(runs: list[Any], label: str) -> list[str]:
    """The summary-only cells: each system's summary of the state it restored, with a
    token limit of its own (an answer's 32 new tokens would cut it at ~25 words)."""
    rows = []
    for r in runs:
        a = probe_stats(r)
        rows.append([system_label(r.system), _subset(r), count_cell(a.get("rouge1"))]
                    + [stat_cell(a.get(f)) for f, _ in _RQ3] + [_failures(r.metrics)])  # fmt: skip
    lines = [f"#### RQ3 summaries on the stated subset, {label} (x100, [95% CI over "
             "conversations])", "",
             "One summary per query of the state the system restored, asked for in at most 150 "
             "words, with its own limit of new tokens (the preset's "
             "`summary_max_new_tokens`); measures as in the main board's RQ3 tables, the "
             "headline first.", "", *rq3_separation(runs, _RQ3[0])]  # fmt: skip
    head = ["method", "subset", "queries n / distinct / clusters"]
    return lines + md_table([*head, *[h for _, h in _RQ3], _FAILED_HEAD], rows)


def _rq1(runs: list[Any], label: str) -> list[str]:
    lines = [
        f"#### RQ1 with ChronoMem's backbone request resolver, {label} (hand-written "
        "held-out requests)",
        "",
    ]
    rows = []
    for r in runs:
        if r.system:  # a generation cell: what the system restored
            probes = r.metrics.probes
            st = (probes.restored or {}).get("selected_exact") if probes else None
            rows.append(
                [
                    system_label(r.system),
                    _subset(r),
                    count_cell(st),
                    stat_cell(st),
                    _failures(r.metrics),
                ]
            )
        for name, groups in sorted(r.metrics.selection.items()):
            if name not in ("chronomem", "bm25_rules"):
                continue
            st = groups.all.get(main_metric("selection").name)
            rows.append(
                [f"selector {name} (no LLM)", _subset(r), count_cell(st), stat_cell(st), "–"]
            )
    lines += md_table(["selector", "subset", "n / distinct / clusters", "R@1",
                        _FAILED_HEAD], rows)  # fmt: skip
    return lines


def _failure_table(runs: list[Any], label: str, rq3: list[Any]) -> list[str]:
    """Parse failures by kind: the kinds the reader recovers from first, then those it
    scores as they stand (a reply can show several kinds). ``rq3``: the summary-only
    cells beside a system's QA cell on the same queries, named apart from it."""
    recovered = [k for k in _SHOWN if k in RECOVERED_KINDS]
    unread = [k for k in _SHOWN if k not in RECOVERED_KINDS]
    rows = []
    for r in runs:
        pf = r.metrics.parse_failures
        if not pf:
            continue
        name = r.system or r.repair_method or r.task_kind
        split = "recovered_replies" in pf
        rows.append(
            [f"{system_label(name)} ({r.queries}{', summaries' if r in rq3 else ''})"
             if r.system else str(name), str(pf.get("replies", 0)),
             str(pf.get("recovered_replies", 0)) if split else "–",
             str(pf.get("unread_replies", 0)) if split else "–"]
            + [str(pf.get(k, 0)) for k in recovered] + [str(pf.get(k, 0)) for k in unread]
        )  # fmt: skip
    if not rows:
        return []
    lines = [f"#### Parse failures by kind, {label}", "",
             "Recovered kinds (read as the reply meant): " + ", ".join(recovered) + ". Unread "
             "kinds (scored as they stood): " + ", ".join(unread) + ". A reply counts once in "
             "recovered or unread, by its worst kind.", ""]  # fmt: skip
    return lines + md_table(["run", "replies", "recovered", "unread", *recovered, *unread], rows)
