"""The repair section of the leaderboard: ``repair_section(source) -> (markdown, run ids)``.

From every finished repair run folder: the controlled set's methods (fair baselines
and the text-heuristic floors), dependency-guided repair's margin over each of them
(paired bootstrap over cases), recovery per case family, the ablations, the stress
set with complete and with missed diagnoses, and the recorded provenance's edge
precision / recall against the generator's gold dependencies. One seed figure is shown
as a labelled reference row; it is not comparable (GPT-4o on the seed's data).

``python -m chronobench.repair.report [results_dir]`` prints the section.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chronobench.metrics.bootstrap import summarise
from chronobench.repair.methods import LABELS
from chronobench.results.schema import finished_at

REFERENCE = "GPT-4o, reported in the seed, not comparable"
_BASELINES = ("value_replay", "memo_replay", "full_reset_replay", "rollback_replay", "delete_only",
              "backbone_judged", "text_floor", "text_floor_replay", "text_taint_replay")  # fmt: skip
_ABLATIONS = (
    "dgr_no_planner",
    "dgr_no_support_check",
    "dgr_no_selective_replay",
    "dgr_prompt_provenance",
    "dgr_record_support",
    "dgr_checked_citations",
)
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
_FAMILIES = ("paraphrase", "coincidence", "tool_argument", "consolidation", "multi_hop")
# (metric, higher is better) of the margin table
_MARGINS = (
    ("recovery", True),
    ("benign_preservation", True),
    ("backbone_calls", False),
    ("replay_ratio", False),
)


def _folders(source: str | Path | Iterable[Any]) -> list[Path]:
    """Run folders: ``results_dir/published/*`` then ``results_dir/runs/*`` for a path, or
    the ``.folder`` of each leaderboard record / each path given."""
    if isinstance(source, (str, Path)):
        root = Path(source)
        return sorted(root.glob("published/*")) + sorted(root.glob("runs/*"))
    return [Path(getattr(r, "folder", r)) for r in source]


def variant(params: dict[str, Any]) -> str:
    """A repair cell's condition, from its ``task.params``: '' for the default (the
    case's diagnosis, exact replay, every session replayable), else e.g. ``noise=0.1``."""
    parts = []
    if params.get("diagnosis", "given") != "given":
        parts.append(f"diagnosis={params['diagnosis']}")
    if params.get("noise"):
        key = ",key=prompt" if params.get("noise_key", "call") == "prompt" else ""
        parts.append(f"noise={float(params['noise']):g}{key}")
    if params.get("retention") is not None:
        parts.append(f"retention={int(params['retention'])}")
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


def _fmt(value: float | None, scale: float) -> str:
    if value is None:
        return "-"
    return f"{value * scale:.1f}" if scale == 100 else f"{value * scale:.2f}"


def _cell(stat: dict[str, Any] | None, scale: float, ci: bool = False) -> str:
    if not stat or stat.get("mean") is None:
        return "-"
    text = _fmt(stat["mean"], scale)
    if ci:
        text += f" [{_fmt(stat['ci_low'], scale)}, {_fmt(stat['ci_high'], scale)}]"
    return text


def _label(method: str) -> str:
    return LABELS.get(method, method).strip()


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
            cells = [_cell(stats.get(k), s, ci) for k, _, s, ci in _COLS]
            out.append(f"| {_label(m)} | {stats['recovery']['n']} | " + " | ".join(cells) + " |")
    for label, values in refs:
        vals = ["-" if v is None else f"{v:.3f}" if i == 6 else f"{v:.2f}" if i == 4 else f"{v:.1f}"
                for i, v in enumerate(values)]  # fmt: skip
        out.append(f"| *{label}* | - | " + " | ".join(vals) + " |")
    return out


def margin(
    a: dict[str, Any], b: dict[str, Any], metric: str, seed: int = 0
) -> dict[str, Any] | None:
    """Mean of ``a - b`` per case with a 95% bootstrap interval over cases (paired), from
    two runs' ``per_case`` blocks; None when the runs did not score the same cases."""
    pa, pb = a.get("per_case"), b.get("per_case")
    if not pa or not pb or pa["case_id"] != pb["case_id"] or metric not in pa:
        return None
    return summarise([x - y for x, y in zip(pa[metric], pb[metric], strict=True)], seed=seed)


def _margins(runs: dict, subset: str) -> list[str]:
    dgr = runs.get((subset, "dgr"))
    if not dgr:
        return []
    head = ["| DGR minus | Recovery pts [95% CI] | Intervals separated | Preservation pts | Backbone calls | Replay ratio pts |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    rows = []
    for m in (*_BASELINES, *_ABLATIONS):
        other = runs.get((subset, m))
        if not other:
            continue
        cells = []
        for metric, _ in _MARGINS:
            d = margin(dgr, other, metric)
            scale = 1 if metric == "backbone_calls" else 100
            cells.append("-" if d is None else _cell(d, scale, ci=True))
        lo, hi = dgr["all"]["recovery"]["ci_low"], other["all"]["recovery"]["ci_high"]
        sep = "yes" if lo is not None and hi is not None and lo > hi else "no"
        rows.append(f"| {_label(m)} | {cells[0]} | {sep} | {cells[1]} | {cells[2]} | {cells[3]} |")
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
                    f"{_cell(stats['recovery'], 100, True)} (n={stats['recovery']['n']})"
                    if stats
                    else "-"
                )
            out.append(f"| {_label(m)} | " + " | ".join(cells) + " |")
    return out


def _provenance(runs: dict) -> list[str]:
    out = ["| Set | Recorded (citations) precision | recall | Prompt contents only precision | recall |",
           "|---|---|---|---|---|"]  # fmt: skip
    for subset in ("controlled", "stress"):
        block = runs.get((subset, "dgr"))
        if block and "prov_precision" in block["all"]:
            s = block["all"]
            cells = [
                _cell(s[k], 100, True)
                for k in ("prov_precision", "prov_recall", "prompt_precision", "prompt_recall")
            ]
            out.append(f"| {subset} | " + " | ".join(cells) + " |")
    return out if len(out) > 2 else []


def _sections(runs: dict[tuple[str, str], dict[str, Any]], label: str) -> list[str]:
    main = ("dgr", *_BASELINES)
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
    lines += _by_group(runs, "controlled", "by_family", _FAMILIES, (*main, *_ABLATIONS))
    lines += ["", "### Controlled set: ablations", ""]
    lines += _table(runs, "controlled", ("dgr", *_ABLATIONS))
    lines += ["", "### Stress set (2-4 faults per case)", ""]
    lines += _table(
        runs,
        "stress",
        (*main, *_ABLATIONS),
        [(f"Dependency-guided repair, {REFERENCE}", _SEED_STRESS)],
    )
    lines += ["", "### Stress set: diagnosis and repair apart", "",
              "Recovery with every fault diagnosed, and with one fault missed by the detector.", ""]  # fmt: skip
    lines += _by_group(runs, "stress", "by_diagnosis", ("complete", "missed"), (*main, *_ABLATIONS))
    prov = _provenance(runs)
    if prov:
        lines += ["", "### Recorded provenance against the generator's gold dependencies", "",
                  "Edge precision / recall of (record or input -> record or claim) dependencies, per case.", "", *prov]  # fmt: skip
    return lines + [""]


def repair_section(source: str | Path | Iterable[Any]) -> tuple[str, set[str]]:
    """(markdown, run ids it names) for the repair runs of ``source`` (a results folder,
    or the leaderboard's run records); ('', set()) when there are none."""
    found = load_repair_runs(source)
    if not found:
        return "", set()
    lines = ["## Repair track (dependency-guided repair, issues 11 and 18)", "",
             "Defined in docs/repair.md. The offline backbone is the track's deterministic policy; "
             "intervals are 95% bootstrap CIs over cases. The row in *italics* is the seed's GPT-4o "
             "figure: a reference, not comparable (other data, other agent, an LLM backbone).", ""]  # fmt: skip
    for label in sorted({k[0] for k in found}, key=lambda x: (x != "offline policy", x)):
        everything = {
            (sub, m, c): v["metrics"] for (b, sub, m, c), v in found.items() if b == label
        }
        runs = {(sub, m): v for (sub, m, c), v in everything.items() if c == ""}
        lines += _sections(runs, label)
        lines += _issue30_sections(everything)
    ids = {v["run_id"] for v in found.values()}
    lines += ["", "Repair runs: " + ", ".join(f"`{i}`" for i in sorted(ids))]
    return "\n".join(lines) + "\n", ids


def render_repair_markdown(source: str | Path | Iterable[Any]) -> str:
    """The markdown section for the repair runs of ``source`` ('' when none)."""
    return repair_section(source)[0]


# -- issue 30: where DGR stands, the graph's share, detectors, noise, unreplayable ------

_CONDITIONS = (
    ("controlled", "", "controlled, exact"),
    ("stress", "", "stress, exact"),
    ("controlled", "noise=0.05", "noise 0.05"),
    ("controlled", "noise=0.1", "noise 0.1"),
    ("controlled", "retention=4", "inputs kept 4 days"),
    ("controlled", "diagnosis=judge", "judge's diagnosis"),
)
_RATES = ("", "noise=0.05", "noise=0.1", "noise=0.2")
_WINDOWS = ("", "retention=4", "retention=2")


def _verdict(dgr: dict[str, Any], other: dict[str, Any]) -> str:
    """DGR against one method on one condition, from paired per-case differences."""
    rec, calls = margin(dgr, other, "recovery"), margin(dgr, other, "backbone_calls")
    if rec is None or calls is None:
        return "-"
    r = f"{_cell(rec, 100, True)}"
    if rec["ci_low"] > 0:
        return f"**better**: recovery {r}"
    if rec["ci_high"] < 0:
        return f"worse: recovery {r}"
    c = _cell(calls, 1, True)
    if calls["ci_high"] < 0:
        return f"fewer calls {c}; recovery {r}"
    if calls["ci_low"] > 0:
        return f"more calls {c}; recovery {r}"
    return f"tie: recovery {r}, calls {c}"


def _standing(everything: dict, base: str = "dgr") -> list[str]:
    conds = [c for c in _CONDITIONS if (c[0], base, c[1]) in everything]
    out = ["| DGR against | " + " | ".join(c[2] for c in conds) + " |",
           "|" + "---|" * (len(conds) + 1)]  # fmt: skip
    for m in (*_BASELINES, *_ABLATIONS, "dgr"):
        if m == base:
            continue
        cells = []
        for sub, cond, _ in conds:
            other = everything.get((sub, m, cond))
            cells.append(_verdict(everything[(sub, base, cond)], other) if other else "-")
        if any(c != "-" for c in cells):
            out.append(f"| {_label(m)} | " + " | ".join(cells) + " |")
    return out if len(out) > 2 else []


def _per_case(everything: dict) -> list[str]:
    """DGR against the graph-free and memoised replays and its own ablations, case by case."""
    out = ["| Condition | DGR against | cases | recovery better / same / worse | calls fewer / same / more | "
           "mean calls difference [95% CI] |", "|---|---|---|---|---|---|"]  # fmt: skip
    for sub, cond, name in (*_CONDITIONS, ("controlled", "retention=2", "inputs kept 2 days")):
        dgr = everything.get((sub, "dgr", cond))
        for m in ("value_replay", "memo_replay", "dgr_record_support", "dgr_prompt_provenance",
                  "dgr_checked_citations"):  # fmt: skip
            other = everything.get((sub, m, cond))
            if not dgr or not other or margin(dgr, other, "backbone_calls") is None:
                continue  # not the same cases, or runs from before per-case values
            a, b = dgr["per_case"], other["per_case"]
            rec = [x - y for x, y in zip(a["recovery"], b["recovery"], strict=True)]
            calls = [x - y for x, y in zip(a["backbone_calls"], b["backbone_calls"], strict=True)]
            fewer = _split([-x for x in calls])
            d = margin(dgr, other, "backbone_calls")
            out.append(
                f"| {name} | {_label(m)} | {len(rec)} | {_split(rec)} | {fewer} | {_cell(d, 1, True)} |"
            )
    return out if len(out) > 2 else []


def _split(diffs: list[float]) -> str:
    """'above / equal / below zero' counts."""
    return (
        f"{sum(x > 0 for x in diffs)} / {sum(x == 0 for x in diffs)} / {sum(x < 0 for x in diffs)}"
    )


def _family_calls(everything: dict) -> list[str]:
    methods = [m for m in ("dgr", "value_replay", "memo_replay", "dgr_record_support", "dgr_prompt_provenance",
                           "dgr_checked_citations")
               if ("controlled", m, "") in everything]  # fmt: skip
    out = ["| Method | " + " | ".join(_FAMILIES) + " |", "|" + "---|" * (len(_FAMILIES) + 1)]
    for m in methods:
        fam = everything[("controlled", m, "")].get("by_family", {})
        cells = [_cell(fam[f]["backbone_calls"], 1, True) if f in fam else "-" for f in _FAMILIES]
        if any(c != "-" for c in cells):
            out.append(f"| {_label(m)} | " + " | ".join(cells) + " |")
    return out if len(out) > 2 else []


def _pooled(per_case: dict[str, list], num: str, extra: str, seed: int = 0) -> dict[str, Any]:
    """sum(num) / sum(num + extra) with a bootstrap interval over cases (a weighted mean
    of per-case ratios, weights the per-case denominators)."""
    pairs = [(a, a + b) for a, b in zip(per_case[num], per_case[extra], strict=True) if a + b]
    if not pairs:  # a case with nothing to count adds nothing to the pooled ratio
        return {"mean": None}
    return summarise([a / d for a, d in pairs], seed=seed, weights=[d for _, d in pairs])


def _detectors(everything: dict) -> list[str]:
    out = ["| Set | Diagnosis | cases | sessions flagged per case | precision % [95% CI] | recall % [95% CI] | "
           "detector backbone calls per case |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    names = {"": "given (the set's own)", "diagnosis=oracle": "every fault (oracle)",
             "diagnosis=judge": "backbone judge", "diagnosis=untrusted": "flag every untrusted session"}  # fmt: skip
    for sub in ("controlled", "stress"):
        for cond, name in names.items():
            block = everything.get((sub, "dgr", cond))
            if not block or "det_tp" not in block.get("per_case", {}):
                continue
            pc = block["per_case"]
            n = len(pc["case_id"])
            flagged = (sum(pc["det_tp"]) + sum(pc["det_fp"])) / n if n else 0
            prec, rec = _pooled(pc, "det_tp", "det_fp"), _pooled(pc, "det_tp", "det_fn")
            calls = block["all"].get("detector_calls", {})
            out.append(f"| {sub} | {name} | {n} | {flagged:.2f} | {_cell(prec, 100, True)} | "
                       f"{_cell(rec, 100, True)} | {_cell(calls, 1)} |")  # fmt: skip
    return out if len(out) > 2 else []


def _grid(everything: dict, sub: str, conds: Iterable[str], names: Iterable[str],
          methods: Iterable[str], metric: str = "recovery") -> list[str]:  # fmt: skip
    conds, names = list(conds), list(names)
    scale = 1 if metric == "backbone_calls" else 100
    out = ["| Method | " + " | ".join(names) + " |", "|" + "---|" * (len(conds) + 1)]
    for m in methods:
        cells = []
        for c in conds:
            block = everything.get((sub, m, c))
            cells.append(_cell(block["all"][metric], scale, True) if block else "-")
        if sum(c != "-" for c in cells) > 1:
            out.append(f"| {_label(m)} | " + " | ".join(cells) + " |")
    return out if len(out) > 2 else []


def _issue30_sections(everything: dict) -> list[str]:
    lines: list[str] = []
    standing = _standing(everything)
    if standing:
        lines += ["### Where dependency-guided repair beats each method, and where it does not", "",
                  "Per condition, from paired per-case differences (DGR minus the method, mean [95% bootstrap CI "
                  "over cases]): **better** when DGR's recovery margin excludes 0, worse when the method's does; "
                  "otherwise recovery is not separated and the backbone calls decide (fewer / more calls when "
                  "that margin excludes 0, else a tie).", "", *standing, ""]  # fmt: skip
    checked = _standing(everything, "dgr_checked_citations")
    if checked:
        lines += ["The same for DGR with its citations checked against the prompt "
                  "(`dgr_checked_citations`: a line whose cited record is not the newest shown record "
                  "stating its slot gets its whole prompt as evidence; identical to DGR when citations "
                  "are exact):", "", *checked, ""]  # fmt: skip
    per_case = _per_case(everything)
    if per_case:
        lines += ["### What the provenance graph adds over value-change and memoised replay, case by case", "",
                  "Counts of cases where DGR's recovery is better / the same / worse, and where it uses fewer / "
                  "the same / more backbone calls, against the graph-free value-change replay, the "
                  "prompt-memoised full replay and DGR's own record-level and prompt-level variants.", "",
                  *per_case, ""]  # fmt: skip
    fam = _family_calls(everything)
    if fam:
        lines += ["Backbone calls per case by family (controlled, exact replay):", "", *fam, ""]
    det = _detectors(everything)
    if det:
        lines += ["### Detectors: sessions flagged as faulty against the generator's faults", "",
                  "Pooled over the sessions of every case (a session is a fault when the generator injected it); "
                  "the interval resamples cases. About 75% of the untrusted sessions are correct.", "", *det, ""]  # fmt: skip
    diag_conds = ("", "diagnosis=oracle", "diagnosis=judge", "diagnosis=untrusted")
    diag_names = ("given", "every fault", "backbone judge", "every untrusted session")
    for sub in ("controlled", "stress"):
        grid = _grid(everything, sub, diag_conds, diag_names, ("dgr", *_BASELINES))
        if grid:
            lines += [f"### {sub.capitalize()} set: recovery % given each diagnosis", "", *grid, ""]
    rate_names = ("0 (exact)", "0.05", "0.1", "0.2")
    methods = (
        "dgr",
        "dgr_checked_citations",
        "dgr_prompt_provenance",
        "dgr_record_support",
        *_BASELINES,
    )
    grid = _grid(everything, "controlled", _RATES, rate_names, methods)
    if grid:
        lines += ["### Replay noise: recovery % over the noise rate (controlled set)", "",
                  "Every backbone call of the case (failed run, repair, judge) passes the noise model; each of "
                  "reading slip, citation omission and wrong citation fires per reply line at the rate; draws "
                  "are keyed per call (docs/repair.md); the gold answer is the noise-free re-run.", "", *grid, ""]  # fmt: skip
        calls = _grid(everything, "controlled", _RATES, rate_names, methods, "backbone_calls")
        lines += ["Backbone calls per case over the noise rate:", "", *calls, ""]
        keyed = _grid(everything, "controlled", ("noise=0.1", "noise=0.1,key=prompt"),
                      ("0.1, keyed per call", "0.1, keyed by prompt"), methods)  # fmt: skip
        if keyed:
            lines += ["Noise keyed by the prompt alone (a re-run of an unchanged prompt reproduces the failed "
                      "run's reply) against keyed per call, recovery %:", "", *keyed, ""]  # fmt: skip
    win_names = ("every session", "4 days", "2 days")
    grid = _grid(everything, "controlled", _WINDOWS, win_names, methods)
    if grid:
        lines += ["### Sessions that cannot be re-run: recovery % by input retention (controlled set)", "",
                  "Inputs older than the window and every pasted document are gone; a session that cannot be "
                  "re-run keeps its recorded writes (DGR and the value-change replay drop them when they are "
                  "unsupported / read a changed value).", "", *grid, "",
                  "Backbone calls per case:", "",
                  *_grid(everything, "controlled", _WINDOWS, win_names, methods, "backbone_calls"), ""]  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    """Print the repair section for ``argv[0]`` (default ``results``)."""
    args = sys.argv[1:] if argv is None else argv
    print(render_repair_markdown(args[0] if args else "results") or "no repair runs found")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
