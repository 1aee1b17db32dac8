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
from chronobench.metrics.replies import RECOVERED_KINDS
from chronobench.results.metrics_file import RunMetrics

SPEED_FILE = "LLM_CPU_SPEED.md"
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


def model_of(r: Any) -> str:
    """The model a small-LLM run's replies came from: a packaged backbone's model
    (``qwen-1b5`` -> ``qwen2.5-1.5b``), else the run's ``backbone.model`` (a replayed
    run names the model that wrote its completions), else the backbone's name."""
    from chronobench.backbones.packaged import PACKAGED_BACKBONES

    name = r.backbone_name or ""
    if name in PACKAGED_BACKBONES:
        return PACKAGED_BACKBONES[name]
    # A repair run's record names no model (its task is not a generation table's): its
    # spec does, and a replayed repair run belongs with the model that wrote its replies.
    return str(getattr(r, "model", None) or _spec_model(r) or name or "?")


def _spec_model(r: Any) -> str | None:
    path = Path(r.folder) / "manifest.json"
    try:
        spec = json.loads(path.read_text(encoding="utf-8")).get("spec") or {}
    except (OSError, ValueError):
        return None
    return (spec.get("backbone") or {}).get("model")


def _completions_files(runs: list[Any]) -> list[str]:
    """The completions files replayed runs read (their spec's ``backbone.params``)."""
    from chronobench.paths import resolve_shipped

    files: list[str] = []
    for r in runs:
        try:
            spec = json.loads((Path(r.folder) / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        backbone = (spec.get("spec") or {}).get("backbone") or {}
        path = resolve_shipped((backbone.get("params") or {}).get("completions"))
        if backbone.get("name") == "replay" and path and path not in files:
            files.append(path)
    return files


def _reply_runtimes(runs: list[Any]) -> dict[str, dict[str, Any]]:
    """prompt id -> the ``runtime`` its reply records, over the completions files the
    replayed runs read (the first line of an id wins, as the batch count always did)."""
    runtimes: dict[str, dict[str, Any]] = {}
    for path in _completions_files(runs):
        try:
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        rec = json.loads(line)
                        runtimes.setdefault(str(rec.get("id")), dict(rec.get("runtime") or {}))
        except (OSError, ValueError, TypeError, AttributeError):
            continue  # the file is checked where it is replayed; here it only informs
    return runtimes


def _decoding(runs: list[Any]) -> str:
    """How the replies were decoded: one prompt at a time, unless a replayed file says
    some came from left-padded batches (``generate --batch-size``), where a greedy reply
    can differ from the unpadded one by a token; that is stated with the counts."""
    batch: dict[str, int] = {}
    try:
        for pid, rt in _reply_runtimes(runs).items():
            batch[pid] = int(rt.get("batch_size") or 1)
    except (TypeError, ValueError):
        batch = {}
    batched = {size for size in batch.values() if size > 1}
    if not batched:
        return "greedy, one prompt at a time."
    n = sum(1 for size in batch.values() if size > 1)
    sizes = " or ".join(str(b) for b in sorted(batched))
    return (
        f"greedy; {len(batch) - n:,} of the {len(batch):,} replies one prompt at a time, "
        f"{n:,} in left-padded batches of {sizes} (`generate --batch-size`: a padded "
        "reply can differ from the unpadded one by a token, docs/llm_anywhere.md)."
    )


def runtime_phrase(runtimes: list[dict[str, Any]]) -> str:
    """What ran a split model's replies, from the ``runtime`` each reply records.
    Replies that record none, and transformers' bfloat16 ones, are the published
    replies' runtime: "run in bfloat16", as before. Any other runtime (CTranslate2's
    int8, transformers' float32) is named with its count: its greedy replies are not
    bfloat16's, so a section never passes them off as such."""
    counts: dict[str, int] = {}
    for rt in runtimes:
        if rt.get("runtime") == "ctranslate2":
            version = f" {rt['ctranslate2']}" if rt.get("ctranslate2") else ""
            what = f"on CTranslate2{version} ({rt.get('compute_type') or '?'})"
        else:
            what = f"in {rt.get('dtype') or 'bfloat16'}"
        counts[what] = counts.get(what, 0) + 1
    if set(counts) <= {"in bfloat16"}:
        return "run in bfloat16"
    if len(counts) == 1:
        return f"run {next(iter(counts))}"
    parts = ", ".join(f"{n:,} {what}" for what, n in sorted(counts.items(), key=lambda x: -x[1]))
    return f"replies run {parts}"


def _model_line(
    model: str, backbones: set[str], decoding: str, runtime: str = "run in bfloat16"
) -> list[str]:
    from chronobench.backbones.packaged import MODELS, PACKAGED

    m = MODELS.get(model)
    if m is None:
        return [f"Model: `{model}` (backbones: {', '.join(sorted(backbones))})."]
    how = (
        "replies written by `chronobench generate` and read back by `backbone=replay` "
        "(docs/llm_anywhere.md)"
        if "replay" in backbones
        else "through the transformers backbone"
    )
    name = m.label.replace(" (CPU)", "")
    if model in PACKAGED:
        pm = PACKAGED[model]
        source = (
            f"from the PyPI wheel `{pm.requirement}` (sha256 `{pm.wheel_sha256[:12]}...`, a "
            "Q4_1 GGUF dequantised to float32)"
        )
    else:  # a split model: the official file, reassembled from part wheels and verified
        first, last = m.parts[0], m.parts[-1]  # type: ignore[union-attr]
        stem = first.dist.rsplit("-part", 1)[0]
        source = (
            f"the official `{m.filename}` (sha256 `{m.sha256[:12]}...`, "  # type: ignore[union-attr]
            f"reassembled from the PyPI part wheels `{stem}-part1..{len(m.parts)}=="  # type: ignore[union-attr]
            f"{last.version}` and verified), dequantised and {runtime}"
        )
    return [
        f"Model: **{name}** ({m.parameters} parameters, licence {m.licence}), {source}, "
        f"{how}, {decoding}"
    ]


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
    runtime = runtime_phrase(list(_reply_runtimes(chosen).values()))
    lines = [f"### {label}", "", *_model_line(model, backbones, _decoding(chosen), runtime), ""]
    built = [r for r in chosen if r.task_kind == "benchmark" and r.system and r.queries == "built"]
    gen = [r for r in built if not _summaries_only(r)]
    rq3 = {r.system: r for r in built if _summaries_only(r)}
    shown, prompt_only_note = _without_same_prompts(gen)
    # A prompt-only row left out leaves the failure table too.
    chosen = [r for r in chosen if r in shown or r not in gen]
    gen = shown
    rq3_rows = [rq3[r.system] for r in gen if r.system in rq3]
    rq3_rows += [r for r in rq3.values() if r not in rq3_rows]
    if gen:
        lines += _known_lines(gen)
        lines += _separation(gen)
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
                a["rouge1"] = _probe_stats(rq3[r.system]).get("rouge1")
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


def _probe_stats(r: Any) -> dict[str, Any]:
    probes = r.metrics.probes
    return dict(probes.all or {}) if probes is not None else {}


def _rq3_separation(runs: list[Any]) -> list[str]:
    """Whether ChronoMem's RQ3 headline interval separates from the other summary
    cells' (its oracle's aside), said in words."""
    by = {r.system: r for r in runs}

    def headline(r: Any) -> Any:
        return _probe_stats(r).get(_RQ3[0][0])

    mine = headline(by["chronomem"]) if "chronomem" in by else None
    if mine is None or mine.ci_low is None or mine.ci_high is None:
        return []
    others = tuple(s for s in by if s not in ("chronomem", "chronomem_oracle"))
    said = _versus(mine, by, others, headline)
    if not said:
        return []
    return [f"RQ3 headline ({_RQ3[0][1]}), ChronoMem {stat_cell(mine)} against "
            + "; ".join(said) + ".", ""]  # fmt: skip


def _rq3(runs: list[Any], label: str) -> list[str]:
    """The summary-only cells: each system's summary of the state it restored, with a
    token limit of its own (an answer's 32 new tokens would cut it at ~25 words)."""
    rows = []
    for r in runs:
        a = _probe_stats(r)
        rows.append([_label(r.system), _subset(r), count_cell(a.get("rouge1"))]
                    + [stat_cell(a.get(f)) for f, _ in _RQ3] + [_failures(r.metrics)])  # fmt: skip
    lines = [f"#### RQ3 summaries on the stated subset, {label} (x100, [95% CI over "
             "conversations])", "",
             "One summary per query of the state the system restored, asked for in at most 150 "
             "words, with its own limit of new tokens (the preset's "
             "`summary_max_new_tokens`); measures as in the main board's RQ3 tables, the "
             "headline first.", "", *_rq3_separation(runs)]  # fmt: skip
    head = ["method", "subset", "queries n / distinct / clusters"]
    return lines + md_table([*head, *[h for _, h in _RQ3], _FAILED_HEAD], rows)


def _same_replies(a: Any, b: Any) -> bool:
    """Whether two runs answered every probe of every query alike (their per-query
    files): on an add-only stream prompt-only's prompts are full-history's, so under
    greedy decoding its replies are too, and its row would repeat full-history's."""
    from chronobench.results.per_query import QUERIES_FILE, QueryFile

    def answers(r: Any) -> dict[str, list[tuple[str, str, str]]] | None:
        path = Path(r.folder) / QUERIES_FILE
        if not path.is_file():
            return None
        out = {}
        for q in QueryFile(path).queries:
            probes = q.get("probes") or []
            out[str(q["query_id"])] = sorted(
                (str(p.get("item")), str(p.get("label")), str(p.get("answer"))) for p in probes
            )
        return out

    left, right = answers(a), answers(b)
    return left is not None and left == right


def _without_same_prompts(gen: list[Any]) -> tuple[list[Any], str]:
    """The generation rows less prompt-only where its replies are full-history's, and
    the line that says why it is missing (empty when nothing is left out)."""
    full = next((r for r in gen if r.system == "full_history"), None)
    if full is None:
        return gen, ""
    po = next((r for r in gen if r.system == "prompt_only"), None)
    if po is None:
        return gen, (
            "Prompt-only is not run here: on LoCoMo's add-only streams (nothing is ever "
            "overwritten) its prompts are full-history's."
        )
    if not _same_replies(po, full):
        return gen, ""
    return [r for r in gen if r is not po], (
        "Prompt-only is not shown: every one of its replies is full-history's (on LoCoMo's "
        "add-only streams its prompts are the same), so its row would repeat that one."
    )


def _known_lines(gen: list[Any]) -> list[str]:
    """The known set this model's rows were scored with, and its size over the items
    their queries probe (from the per-query files' keep / forget entries)."""
    from chronobench.results.per_query import QUERIES_FILE, QueryFile

    sizes: dict[str, tuple[int, int, int]] = {}
    for r in gen:
        sha = _known_sha(r)
        path = Path(r.folder) / QUERIES_FILE
        if sha is None or sha in sizes or not path.is_file():
            continue
        flags: dict[tuple[str, str], bool] = {}
        streams = set()
        for q in QueryFile(path).queries:
            for p in q.get("probes") or []:
                if "known" in p:
                    flags[(str(q["stream_id"]), str(p["item"]))] = bool(p["known"])
                    streams.add(str(q["stream_id"]))
        sizes[sha] = (sum(flags.values()), len(flags), len(streams))
    if not sizes:
        return []
    parts = [
        f"{k} of the {n} battery items these queries probe, over {s} conversations "
        f"(sha256 `{sha[:12]}...`)"
        for sha, (k, n, s) in sorted(sizes.items())
    ]
    return [
        "Known set (protocol 3: the items the reference reader, ChronoMem with its defaults "
        "through this model, answers; only those count for RC-QA): " + "; ".join(parts) + ".",
        "",
    ]


def _known_sha(r: Any) -> str | None:
    path = Path(r.folder) / "manifest.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("known_sha256")
    except (OSError, ValueError):
        return None


def _separation(gen: list[Any]) -> list[str]:
    """Whether ChronoMem's RC-QA interval separates from full-history's and
    prompt-only's, and from the request-blind floors' (a method that does not beat
    restoring a version blindly shows nothing about reading the request), said in words
    (overlapping intervals do not)."""
    by = {r.system: r for r in gen}
    ours = next((by[s] for s in ("chronomem", "chronomem+resolver") if s in by), None)
    if ours is None:
        return []
    mine = _rc(ours)
    if mine is None or mine.ci_low is None or mine.ci_high is None:
        return []
    lines = []
    said = _versus(mine, by, ("full_history", "prompt_only"))
    if said:
        lines += [f"RC-QA, {_label(ours.system)} {stat_cell(mine)} against " + "; ".join(said)
                  + ".", ""]  # fmt: skip
    floors = _versus(mine, by, ("floor_restore_random", "floor_restore_v1"))
    if floors:
        lines += [f"Against the request-blind floors, {_label(ours.system)}'s RC-QA: "
                  + "; ".join(floors) + ".", ""]  # fmt: skip
    return lines


def _versus(
    mine: Any, by: dict[str | None, Any], others: tuple[str, ...], stat: Any = None
) -> list[str]:
    """``<label> <stat>: whether the intervals overlap`` for each of ``others`` run
    (``stat``: a run's figure; RC-QA unless given)."""
    stat = stat or _rc
    said = []
    for other in others:
        st = stat(by[other]) if other in by else None
        if st is None or st.ci_low is None or st.ci_high is None:
            continue
        apart = mine.ci_low > st.ci_high or st.ci_low > mine.ci_high
        said.append(
            f"{_label(other)} {stat_cell(st)}: "
            + (
                "the intervals do not overlap"
                if apart
                else "the intervals overlap, so this subset does not separate them"
            )  # fmt: skip
        )
    return said


def _rc(r: Any) -> Any:
    probes = r.metrics.probes
    return (probes.all or {}).get("rc_qa") if probes is not None else None


def _label(system: str | None) -> str:
    from chronobench.systems.registry import SYSTEMS

    base = str(system).replace("+resolver", "")
    label = SYSTEMS.label(base) if base in SYSTEMS else base
    return label + (" + backbone resolver" if str(system).endswith("+resolver") else "")


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
            [f"{_label(name)} ({r.queries}{', summaries' if r in rq3 else ''})"
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
