"""The repair section of the leaderboard: ``repair_section(source) -> (markdown, run ids)``.

From every finished repair run folder: the controlled set's methods (fair baselines
and the text-heuristic floors), dependency-guided repair's margin over each of them
(paired bootstrap over cases), recovery per case family, the ablations, the stress
set with complete and with missed diagnoses, and the recorded provenance's edge
precision / recall against the generator's gold dependencies. One seed figure is shown
as a labelled reference row; it is not comparable (GPT-4o on the seed's data).

``python -m chronobench.tracks.repair.report [results_dir]`` prints the section.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chronobench.results.schema import finished_at
from chronobench.tracks.repair.report_cells import (
    ABLATIONS,
    BASELINES,
    FAMILIES,
    fmt_cell,
    margin,
    method_label,
)
from chronobench.tracks.repair.report_standing import (
    earned_sections,
    planner_sentence,
    standing_sections,
)

REFERENCE = "GPT-4o, reported in the seed, not comparable"
_COLS = (
    ("recovery", "Recovery %", 100, True),
    ("faulty_removal", "Faulty removal %", 100, False),
    ("benign_preservation", "Benign preservation %", 100, False),
    ("replay_ratio", "Replay ratio %", 100, False),
    ("backbone_calls", "Backbone calls", 1, True),
    ("recurrence", "Recurrence %", 100, False),
    ("claim_f1", "Claim recompute F1", 1, False),
)
_SEED_MAIN = (85.3, 100.0, 100.0, 12.3, 5.70, 26.6, None)
_SEED_STRESS = (68.0, None, None, None, None, None, 0.669)
# (metric, higher is better) of the margin table
_MARGINS = (
    ("recovery", True),
    ("benign_preservation", True),
    ("backbone_calls", False),
    ("replay_ratio", False),
)


def record_fields(spec: Any) -> dict[str, Any]:
    """A repair run's field of the leaderboard's record: its method (the spec's system),
    which the small-language-model section names."""
    return {"repair_method": spec.system.name}


def _folders(source: str | Path | Iterable[Any]) -> list[Path]:
    """Run folders: ``results_dir/published/*`` then ``results_dir/runs/*`` for a path, or
    the ``.folder`` of each leaderboard record / each path given."""
    if isinstance(source, (str, Path)):
        root = Path(source)
        return sorted(root.glob("published/*")) + sorted(root.glob("runs/*"))
    return [Path(getattr(r, "folder", r)) for r in source]


def variant(params: dict[str, Any]) -> str:
    """A repair cell's condition, from its recorded ``task.params``: '' for the defaults
    (:class:`~chronobench.tracks.repair.run.RepairTaskParams`), else e.g. ``noise=0.1``."""
    from chronobench.tracks.repair.run import RepairTaskParams

    p, default = RepairTaskParams.model_validate(params), RepairTaskParams()
    parts = []
    if p.diagnosis != default.diagnosis:
        parts.append(f"diagnosis={p.diagnosis}")
    if p.noise:
        key = f",key={p.noise_key}" if p.noise_key != default.noise_key else ""
        parts.append(f"noise={float(p.noise):g}{key}")
    if p.retention is not None:
        parts.append(f"retention={p.retention}")
    return ";".join(parts)


def load_repair_runs(
    source: str | Path | Iterable[Any],
) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """``{(backbone, subset, method, variant): {"run_id", "metrics"}}`` of finished repair
    runs (the newest per cell); ``source`` as in :func:`_folders`."""
    found: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for folder in _folders(source):
        try:
            man = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
            spec = man["spec"]
            if spec["task"].get("kind") != "repair":
                continue
            metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))["metrics"]
        except (OSError, KeyError, ValueError):
            continue
        b = spec["backbone"]
        label = "offline policy" if b["name"] == "extractive" else f"{b['name']} {b['model']}"
        cond = variant(spec["task"].get("params") or {})
        key = (label, spec["dataset"]["granularity"], spec["system"]["name"], cond)
        done = finished_at(folder)  # volatile.json (schema 2.0: the manifest)
        if key not in found or done >= found[key]["finished_at"]:
            found[key] = {"run_id": man["run_id"], "metrics": metrics, "finished_at": done}
    return found


def _table(
    runs: dict, subset: str, methods: Iterable[str], refs: list[tuple[str, tuple]] = ()
) -> list[str]:
    out = [
        "| Method | n | " + " | ".join(c[1] for c in _COLS) + " |",
        "|" + "---|" * (len(_COLS) + 2),
    ]
    for m in methods:
        block = runs.get((subset, m))
        if block:
            stats = block["all"]
            cells = [fmt_cell(stats.get(k), s, ci) for k, _, s, ci in _COLS]
            moot = (block.get("not_applicable") or {}).get("n", 0)
            n = f"{stats['recovery']['n']}" + (f" (+{moot} not applicable)" if moot else "")
            out.append(f"| {method_label(m)} | {n} | " + " | ".join(cells) + " |")
    for label, values in refs:
        vals = ["-" if v is None else f"{v:.3f}" if i == 6 else f"{v:.2f}" if i == 4 else f"{v:.1f}"
                for i, v in enumerate(values)]  # fmt: skip
        out.append(f"| *{label}* | - | " + " | ".join(vals) + " |")
    return out


def _margins(runs: dict, subset: str) -> list[str]:
    dgr = runs.get((subset, "dgr"))
    if not dgr:
        return []
    head = ["| DGR minus | Recovery pts [95% CI] | Intervals separated | Preservation pts | Backbone calls | Replay ratio pts |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    rows = []
    for m in (*BASELINES, *ABLATIONS):
        other = runs.get((subset, m))
        if not other:
            continue
        cells = []
        for metric, _ in _MARGINS:
            d = margin(dgr, other, metric)
            scale = 1 if metric == "backbone_calls" else 100
            cells.append("-" if d is None else fmt_cell(d, scale, ci=True))
        lo, hi = dgr["all"]["recovery"]["ci_low"], other["all"]["recovery"]["ci_high"]
        sep = "yes" if lo is not None and hi is not None and lo > hi else "no"
        rows.append(
            f"| {method_label(m)} | {cells[0]} | {sep} | {cells[1]} | {cells[2]} | {cells[3]} |"
        )
    return head + rows if rows else []


def _by_group(
    runs: dict, subset: str, group: str, names: Iterable[str], methods: Iterable[str]
) -> list[str]:
    names = list(names)
    out = ["| Method | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    for m in methods:
        block = runs.get((subset, m))
        if block:
            cells = []
            for g in names:
                stats = block.get(group, {}).get(g)
                cells.append(
                    f"{fmt_cell(stats['recovery'], 100, True)} (n={stats['recovery']['n']})"
                    if stats
                    else "-"
                )
            out.append(f"| {method_label(m)} | " + " | ".join(cells) + " |")
    return out


def _provenance(runs: dict) -> list[str]:
    out = ["| Set | Recorded (citations) precision | recall | Prompt contents only precision | recall |",
           "|---|---|---|---|---|"]  # fmt: skip
    for subset in ("controlled", "stress"):
        block = runs.get((subset, "dgr"))
        if block and "prov_precision" in block["all"]:
            s = block["all"]
            cells = [
                fmt_cell(s[k], 100, True)
                for k in ("prov_precision", "prov_recall", "prompt_precision", "prompt_recall")
            ]
            out.append(f"| {subset} | " + " | ".join(cells) + " |")
    return out if len(out) > 2 else []


def _sections(runs: dict[tuple[str, str], dict[str, Any]], label: str) -> list[str]:
    main = ("dgr", *BASELINES)
    lines = [
        f"Backbone: {label}.",
        "",
        "### Controlled set: methods, baselines and text-heuristic floors",
        "",
    ]
    lines += _table(
        runs, "controlled", main, [(f"Dependency-guided repair, {REFERENCE}", _SEED_MAIN)]
    )
    margins = _margins(runs, "controlled")
    if margins:
        lines += ["", "### Controlled set: dependency-guided repair's margin over each method", "",
                  "Paired differences per case (DGR minus the method), mean [95% bootstrap CI over cases]; "
                  "'separated': DGR's recovery interval lies wholly above the method's.", "", *margins]  # fmt: skip
    lines += ["", "### Controlled set: recovery by case family", ""]
    lines += _by_group(runs, "controlled", "by_family", FAMILIES, (*main, *ABLATIONS))
    lines += ["", "### Controlled set: ablations", ""]
    lines += _table(runs, "controlled", ("dgr", *ABLATIONS))
    lines += ["", "### Stress set (2-4 faults per case)", ""]
    lines += _table(
        runs,
        "stress",
        (*main, *ABLATIONS),
        [(f"Dependency-guided repair, {REFERENCE}", _SEED_STRESS)],
    )
    lines += ["", "### Stress set: diagnosis and repair apart", "",
              "Recovery with every fault diagnosed, and with one fault missed by the detector.", ""]  # fmt: skip
    lines += _by_group(runs, "stress", "by_diagnosis", ("complete", "missed"), (*main, *ABLATIONS))
    prov = _provenance(runs)
    if prov:
        lines += ["", "### Recorded provenance against the generator's gold dependencies", "",
                  "Edge precision / recall of (record or input -> record or claim) dependencies, per case.", "", *prov]  # fmt: skip
    return lines + [""]


def _earned(runs: dict[tuple[str, str], dict[str, Any]], everything: dict) -> list[str]:
    """The sets whose diagnosis must be earned (builder repair-4): methods per set, then
    the standing, detector and diagnosis tables."""
    if not any(sub.startswith("earned_") for sub, _ in runs):
        return []
    lines = ["### Sets whose diagnosis must be earned (experiment=repair_earned)", "",
             "Built by `chronobench/repair/generate_earned.py` (docs/repair.md): every benign untrusted "
             "session is followed up as a fault is, benign summaries change values, merge and summary "
             "slots are shuffled, faults sit at random positions among the untrusted sessions. The sets "
             "above are their published control, and these are a published control in turn: with one "
             "advisory chain, DGR driven by a zero-call rule (the last session a lookup reads) scores more "
             "on the controlled set than DGR given the backbone judge's diagnosis (validity audit, top "
             "of the board). The "
             "repair headlines are the retrieval sets' below.", ""]  # fmt: skip
    main = ("dgr", *BASELINES, *ABLATIONS)
    for sub, title in (("earned_controlled", "Earned controlled set (one fault per case)"),
                       ("earned_stress", "Earned stress set (2-4 faults per case)")):  # fmt: skip
        if any(s == sub for s, _ in runs):
            lines += [f"### {title}", "", *_table(runs, sub, main), ""]
    return lines + earned_sections(everything)


# The methods of the retrieval sets' tables: DGR, the graph-free planners (log-only
# guesses at what retrieval returned, and the agent's retriever replayed), the baselines.
_RETRIEVAL_METHODS = ("dgr", "graph_free_planner", "graph_free_planner_lexical",
                      "graph_free_planner_slot", "graph_free_planner_retriever", "value_replay",
                      "memo_replay", "full_reset_replay", "rollback_replay", "delete_only")  # fmt: skip


_RETRIEVAL_CONDITIONS = (
    ("retrieval_controlled", "", "retrieval controlled, exact"),
    ("retrieval_stress", "", "retrieval stress, exact"),
    ("retrieval_controlled", "diagnosis=judge", "judge's diagnosis"),
    ("retrieval_controlled", "noise=0.05", "noise 0.05"),
    ("retrieval_controlled", "noise=0.2", "noise 0.2"),
    ("retrieval_controlled", "retention=2", "inputs kept 2 days"),
)
_RETRIEVAL_PLANNERS = (
    ("graph_free_planner", "the graph-free planner** (log and versions; a retrieval-driven "
     "session taken to read its slot's newest record)"),
    ("graph_free_planner_lexical", "the graph-free planner guessing what retrieval returned "
     "from the query's words**"),
    ("graph_free_planner_slot", "the graph-free planner re-running every session that could "
     "have read a changed slot**"),
    ("graph_free_planner_retriever", "the graph-free planner re-running the agent's retriever "
     "on the versions** (not log-only)"),
)  # fmt: skip


def _retrieval(runs: dict, everything: dict) -> list[str]:
    """The retrieval sets (builder repair-6): methods per set, DGR's paired margin over
    each planner, then the other conditions' cells."""
    if not any(sub.startswith("retrieval_") for sub, _ in runs):
        return []
    lines = ["### Sets where retrieval decides what a session reads (experiment=repair_retrieval)", "",
             "The two-chain histories (builder repair-6, docs/repair.md): notes and advisory lookups log "
             "the search query they issued and read the newest slot record among the top 3 retrieval "
             "returns; which records it returned is in the provenance only. The planners below guess "
             "those reads from the log, or re-run the agent's retriever on the versions (not log-only). "
             "These sets carry the repair headlines.",
             ""]  # fmt: skip
    for sub, title in (("retrieval_controlled", "Retrieval controlled set (one fault per case)"),
                       ("retrieval_stress", "Retrieval stress set (2-4 faults per case)")):  # fmt: skip
        if not any(s == sub for s, _ in runs):
            continue
        lines += [f"### {title}", "", *_table(runs, sub, _RETRIEVAL_METHODS), ""]
        dgr, rows = runs.get((sub, "dgr")), []
        for m in _RETRIEVAL_METHODS[1:5]:
            d = margin(dgr, runs[(sub, m)], "recovery") if dgr and (sub, m) in runs else None
            if d is not None:
                rows.append(f"| {method_label(m)} | {fmt_cell(d, 100, ci=True)} |")
        if rows:
            lines += ["DGR minus each planner, recovery points per case (paired) [95% CI]:", "",
                      "| Planner | DGR minus planner |", "|---|---|", *rows, ""]  # fmt: skip
    for planner, name in _RETRIEVAL_PLANNERS:
        sentence = planner_sentence(everything, _RETRIEVAL_CONDITIONS, planner, name)
        if sentence:
            lines += [sentence, ""]
    cond = sorted((sub, m, c) for sub, m, c in everything if sub.startswith("retrieval_") and c)
    if cond:
        lines += ["### Retrieval sets: other diagnoses, replay noise, retention", "",
                  "| Set | Condition | Method | n | Recovery % | Backbone calls |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        for sub, m, c in cond:
            stats = everything[(sub, m, c)]["all"]
            lines.append(f"| {sub} | {c} | {method_label(m)} | {stats['recovery']['n']} | "
                         f"{fmt_cell(stats.get('recovery'), 100, True)} | "
                         f"{fmt_cell(stats.get('backbone_calls'), 1)} |")  # fmt: skip
        lines.append("")
    return lines


def repair_section(source: str | Path | Iterable[Any]) -> tuple[str, set[str]]:
    """(markdown, run ids it names) for the repair runs of ``source`` (a results folder,
    or the leaderboard's run records); ('', set()) when there are none."""
    found = load_repair_runs(source)
    if not found:
        return "", set()
    lines = ["## Repair track (dependency-guided repair, issues 11 and 18)", "",
             "Defined in docs/repair.md. The offline backbone is the track's deterministic policy; "
             "intervals are 95% bootstrap CIs over cases. The row in *italics* is the seed's GPT-4o "
             "figure: a reference, not comparable (other data, other agent, an LLM backbone). A case whose "
             "fault never reached memory has nothing to repair: it is counted as not applicable beside n, "
             "never scored 0.", ""]  # fmt: skip
    for label in sorted({k[0] for k in found}, key=lambda x: (x != "offline policy", x)):
        everything = {
            (sub, m, c): v["metrics"] for (b, sub, m, c), v in found.items() if b == label
        }
        runs = {(sub, m): v for (sub, m, c), v in everything.items() if c == ""}
        lines += _sections(runs, label)
        lines += standing_sections(everything)
        lines += _earned(runs, everything)
        lines += _retrieval(runs, everything)
    ids = {v["run_id"] for v in found.values()}
    lines += ["", "Repair runs: " + ", ".join(f"`{i}`" for i in sorted(ids))]
    return "\n".join(lines) + "\n", ids


def render_repair_markdown(source: str | Path | Iterable[Any]) -> str:
    """The markdown section for the repair runs of ``source`` ('' when none)."""
    return repair_section(source)[0]


def main(argv: list[str] | None = None) -> int:
    """Print the repair section for ``argv[0]`` (default ``results``)."""
    args = sys.argv[1:] if argv is None else argv
    print(render_repair_markdown(args[0] if args else "results") or "no repair runs found")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
