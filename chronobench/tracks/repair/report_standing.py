"""The repair section's standing tables: where DGR stands against each baseline, the
graph's share per case, the detectors, the noise sweep and unreplayable sessions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chronobench.metrics.bootstrap import summarise
from chronobench.tracks.repair.report_cells import (
    ABLATIONS,
    BASELINES,
    FAMILIES,
    fmt_cell,
    margin,
    method_label,
)

# -- where DGR stands, the graph's share, detectors, noise, unreplayable ------

_CONDITIONS = (
    ("controlled", "", "controlled, exact"),
    ("stress", "", "stress, exact"),
    ("controlled", "noise=0.05", "noise 0.05"),
    ("controlled", "noise=0.1", "noise 0.1"),
    ("controlled", "retention=4", "inputs kept 4 days"),
    ("controlled", "diagnosis=judge", "judge's diagnosis"),
)
_RATES = ("", "noise=0.05", "noise=0.1", "noise=0.2")
# The same conditions on the sets whose diagnosis must be earned (experiment=repair_earned).
EARNED_CONDITIONS = (
    ("earned_controlled", "", "earned controlled, exact"),
    ("earned_stress", "", "earned stress, exact"),
    ("earned_controlled", "noise=0.1", "noise 0.1"),
    ("earned_controlled", "retention=4", "inputs kept 4 days"),
    ("earned_controlled", "diagnosis=judge", "judge's diagnosis"),
    ("earned_stress", "diagnosis=judge", "stress, judge's diagnosis"),
)
_WINDOWS = ("", "retention=4", "retention=2")


def _verdict(dgr: dict[str, Any], other: dict[str, Any]) -> str:
    """DGR against one method on one condition, from paired per-case differences."""
    rec, calls = margin(dgr, other, "recovery"), margin(dgr, other, "backbone_calls")
    if rec is None or calls is None:
        return "-"
    r = f"{fmt_cell(rec, 100, True)}"
    if rec["ci_low"] > 0:
        return f"**better**: recovery {r}"
    if rec["ci_high"] < 0:
        return f"worse: recovery {r}"
    c = fmt_cell(calls, 1, True)
    if calls["ci_high"] < 0:
        return f"fewer calls {c}; recovery {r}"
    if calls["ci_low"] > 0:
        return f"more calls {c}; recovery {r}"
    return f"tie: recovery {r}, calls {c}"


def _standing(everything: dict, base: str = "dgr", conditions: Iterable = _CONDITIONS) -> list[str]:
    conds = [c for c in conditions if (c[0], base, c[1]) in everything]
    out = ["| DGR against | " + " | ".join(c[2] for c in conds) + " |",
           "|" + "---|" * (len(conds) + 1)]  # fmt: skip
    for m in (*BASELINES, *ABLATIONS, "dgr"):
        if m == base:
            continue
        cells = []
        for sub, cond, _ in conds:
            other = everything.get((sub, m, cond))
            cells.append(_verdict(everything[(sub, base, cond)], other) if other else "-")
        if any(c != "-" for c in cells):
            out.append(f"| {method_label(m)} | " + " | ".join(cells) + " |")
    return out if len(out) > 2 else []


def planner_sentence(
    everything: dict,
    conditions: Iterable[tuple[str, str, str]] = (),
    planner: str = "graph_free_planner",
    name: str = "the graph-free planner** (the session log and ChronoMem's versions, no "
    "provenance graph)",
) -> str:
    """One plain sentence: does DGR beat the graph-free planner anywhere measured?
    (better recovery with an interval excluding 0, or, recovery no worse on average,
    fewer calls with an interval excluding 0; paired per case). ``conditions``: (subset,
    condition, name) triples; the control sets' list when empty."""
    wins, measured = [], []
    conditions = tuple(conditions) or (
        *_CONDITIONS,
        ("controlled", "noise=0.2", "noise 0.2"),
        ("controlled", "retention=2", "inputs kept 2 days"),
    )
    for sub, cond, label in conditions:
        dgr, other = everything.get((sub, "dgr", cond)), everything.get((sub, planner, cond))
        rec = margin(dgr, other, "recovery") if dgr and other else None
        calls = margin(dgr, other, "backbone_calls") if rec else None
        if rec is None or calls is None:
            continue
        measured.append(label)
        # Fewer calls only count while recovery is not worse on average: an interval
        # that merely touches 0 from below still means DGR recovers less.
        if rec["ci_low"] > 0 or (rec["mean"] >= 0 and calls["ci_high"] < 0):
            wins.append(label)
    if not measured:
        return ""
    if not wins:
        return (f"**Dependency-guided repair does not beat {name} in any condition measured ("
                + ", ".join(measured) + "): its recovery is never higher with an interval "
                "that excludes 0, nor its backbone calls lower without a loss of recovery.")  # fmt: skip
    short = name.replace("**", "").split(" (")[0]
    return (
        f"Dependency-guided repair beats {short} only in: {', '.join(wins)} "
        f"(of {', '.join(measured)})."
    )


def _per_case(everything: dict) -> list[str]:
    """DGR against the graph-free and memoised replays and its own ablations, case by case."""
    out = ["| Condition | DGR against | cases | recovery better / same / worse | calls fewer / same / more | "
           "mean calls difference [95% CI] |", "|---|---|---|---|---|---|"]  # fmt: skip
    for sub, cond, name in (*_CONDITIONS, ("controlled", "retention=2", "inputs kept 2 days")):
        dgr = everything.get((sub, "dgr", cond))
        for m in ("graph_free_planner", "value_replay", "memo_replay", "dgr_record_support",
                  "dgr_prompt_provenance", "dgr_checked_citations"):  # fmt: skip
            other = everything.get((sub, m, cond))
            if not dgr or not other or margin(dgr, other, "backbone_calls") is None:
                continue  # not the same cases, or runs from before per-case values
            a, b = dgr["per_case"], other["per_case"]
            rec = [x - y for x, y in zip(a["recovery"], b["recovery"], strict=True)]
            calls = [x - y for x, y in zip(a["backbone_calls"], b["backbone_calls"], strict=True)]
            fewer = _split([-x for x in calls])
            d = margin(dgr, other, "backbone_calls")
            out.append(
                f"| {name} | {method_label(m)} | {len(rec)} | {_split(rec)} | {fewer} | {fmt_cell(d, 1, True)} |"
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
    out = ["| Method | " + " | ".join(FAMILIES) + " |", "|" + "---|" * (len(FAMILIES) + 1)]
    for m in methods:
        fam = everything[("controlled", m, "")].get("by_family", {})
        cells = [fmt_cell(fam[f]["backbone_calls"], 1, True) if f in fam else "-" for f in FAMILIES]
        if any(c != "-" for c in cells):
            out.append(f"| {method_label(m)} | " + " | ".join(cells) + " |")
    return out if len(out) > 2 else []


def _pooled(per_case: dict[str, list], num: str, extra: str, seed: int = 0) -> dict[str, Any]:
    """sum(num) / sum(num + extra) with a bootstrap interval over cases (a weighted mean
    of per-case ratios, weights the per-case denominators)."""
    pairs = [(a, a + b) for a, b in zip(per_case[num], per_case[extra], strict=True) if a + b]
    if not pairs:  # a case with nothing to count adds nothing to the pooled ratio
        return {"mean": None}
    return summarise([a / d for a, d in pairs], seed=seed, weights=[d for _, d in pairs])


def _detectors(everything: dict, subsets: Iterable[str] = ("controlled", "stress")) -> list[str]:
    out = ["| Set | Diagnosis | cases | sessions flagged per case | precision % [95% CI] | recall % [95% CI] | "
           "detector backbone calls per case |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    names = {"": "given (the set's own)", "diagnosis=oracle": "every fault (oracle)",
             "diagnosis=judge": "backbone judge", "diagnosis=untrusted": "flag every untrusted session",
             "diagnosis=surface": "zero-call surface rule (floor): a follow-up reads the session's slot",
             "diagnosis=surface_lookup": "zero-call: the last session a lookup reads"}  # fmt: skip
    for sub in subsets:
        for cond, name in names.items():
            block = everything.get((sub, "dgr", cond))
            if not block or "det_tp" not in block.get("per_case", {}):
                continue
            pc = block["per_case"]
            n = len(pc["case_id"])
            flagged = (sum(pc["det_tp"]) + sum(pc["det_fp"])) / n if n else 0
            prec, rec = _pooled(pc, "det_tp", "det_fp"), _pooled(pc, "det_tp", "det_fn")
            calls = block["all"].get("detector_calls", {})
            out.append(f"| {sub} | {name} | {n} | {flagged:.2f} | {fmt_cell(prec, 100, True)} | "
                       f"{fmt_cell(rec, 100, True)} | {fmt_cell(calls, 1)} |")  # fmt: skip
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
            cells.append(fmt_cell(block["all"][metric], scale, True) if block else "-")
        if sum(c != "-" for c in cells) > 1:
            out.append(f"| {method_label(m)} | " + " | ".join(cells) + " |")
    return out if len(out) > 2 else []


def standing_sections(everything: dict) -> list[str]:
    lines: list[str] = []
    sentence = planner_sentence(everything)
    if sentence:
        lines += ["### Dependency-guided repair against the graph-free planner", "", sentence, ""]
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
    diag_conds = (
        "",
        "diagnosis=oracle",
        "diagnosis=judge",
        "diagnosis=untrusted",
        "diagnosis=surface",
    )
    diag_names = ("given", "every fault", "backbone judge", "every untrusted session",
                  "zero-call surface rule")  # fmt: skip
    for sub in ("controlled", "stress"):
        grid = _grid(everything, sub, diag_conds, diag_names, ("dgr", *BASELINES))
        if grid:
            lines += [f"### {sub.capitalize()} set: recovery % given each diagnosis", "", *grid, ""]
    rate_names = ("0 (exact)", "0.05", "0.1", "0.2")
    methods = (
        "dgr",
        "dgr_checked_citations",
        "dgr_prompt_provenance",
        "dgr_record_support",
        *BASELINES,
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


def earned_sections(everything: dict) -> list[str]:
    """The standing, detector and diagnosis tables of the earned sets (their methods'
    tables come from the report module)."""
    subsets = ("earned_controlled", "earned_stress")
    if not any(k[0] in subsets for k in everything):
        return []
    lines: list[str] = []
    sentence = planner_sentence(everything, EARNED_CONDITIONS)
    if sentence:
        lines += ["### Earned sets: dependency-guided repair against the graph-free planner", "",
                  sentence, ""]  # fmt: skip
    standing = _standing(everything, conditions=EARNED_CONDITIONS)
    if standing:
        lines += ["Per condition, DGR minus each method, paired per case (as above):", "",
                  *standing, ""]  # fmt: skip
    det = _detectors(everything, subsets)
    if det:
        lines += ["### Earned sets: detectors", "",
                  "The zero-call surface rule finds every fault on the control sets; here every benign "
                  "untrusted session is followed up as a fault is, so it flags sessions at the base rate. "
                  "The last session a lookup reads is still a fault more often than that: a chain-family "
                  "fault holds the advisory chain's first slot, so no benign session on it comes later.",
                  "", *det, ""]  # fmt: skip
    conds = ("", "diagnosis=oracle", "diagnosis=judge", "diagnosis=untrusted", "diagnosis=surface",
             "diagnosis=surface_lookup")  # fmt: skip
    names = ("given", "every fault", "backbone judge", "every untrusted session",
             "zero-call surface rule", "last session a lookup reads")  # fmt: skip
    for sub in subsets:
        grid = _grid(everything, sub, conds, names, ("dgr", *BASELINES))
        if grid:
            title = sub.replace("_", " ").capitalize()
            lines += [f"### {title} set: recovery % given each diagnosis", "", *grid, ""]
    return lines
