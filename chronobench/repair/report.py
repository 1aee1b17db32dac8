"""The repair section of the leaderboard: ``render_repair_markdown(results_dir)``.

Tables shaped like the repair seed's (recovery, removal, preservation, replay ratio,
backbone calls, recurrence; claim invalidation F1 on the stress set), one row per
method, from every finished repair run folder under ``results_dir/runs``. The seed's
own figures appear as reference rows, labelled as such: they come from GPT-4o on the
seed's data and are not comparable with these rows.

``python -m chronobench.repair.report [results_dir]`` prints the section.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chronobench.repair.methods import LABELS
from chronobench.results.schema import finished_at

REFERENCE = "GPT-4o, reported in the seed, not comparable"
_MAIN = ("dgr", "delete_only", "full_reset_replay", "rollback_replay", "backbone_judged")
_ABLATIONS = ("dgr", "dgr_no_planner", "dgr_no_support_check", "dgr_no_selective_replay")
_COLS = (
    ("recovery", "Recovery %", 100),
    ("faulty_removal", "Faulty removal %", 100),
    ("benign_preservation", "Benign preservation %", 100),
    ("replay_ratio", "Replay ratio %", 100),
    ("backbone_calls", "Backbone calls", 1),
    ("recurrence", "Recurrence %", 100),
    ("claim_f1", "Claim inval. F1", 1),
)
# The seed's reported figures (None: not reported there).
_SEED_MAIN = (85.3, 100.0, 100.0, 12.3, 5.70, 26.6, None)
_SEED_ABLATIONS = {
    "dgr_no_planner": (71.3, None, None, None, None, 43.0, None),
    "dgr_no_support_check": (88.0, None, 98.6, None, None, None, None),
    "dgr_no_selective_replay": (84.0, None, None, 75.5, 24.01, None, None),
}
_SEED_STRESS = (68.0, None, None, None, None, None, 0.669)
_SEED_DOMAIN = {"customer_support": 94.3, "shopping": 72.9}
_SEED_FAULT = {"summary_drift": (95.0, None), "wrong_user": (70.6, None), "stale": (94.1, 78.1)}


def _folders(source: str | Path | Iterable[Any]) -> list[Path]:
    """Run folders: ``results_dir/published/*`` then ``results_dir/runs/*`` for a path, or
    the ``.folder`` of each leaderboard record / each path given."""
    if isinstance(source, (str, Path)):
        root = Path(source)
        return sorted(root.glob("published/*")) + sorted(root.glob("runs/*"))
    return [Path(getattr(r, "folder", r)) for r in source]


def load_repair_runs(
    source: str | Path | Iterable[Any],
) -> dict[tuple[str, str, str], dict[str, Any]]:
    """``{(backbone, subset, method): {"run_id", "metrics"}}`` of finished repair runs
    (the newest per cell); ``source`` as in :func:`_folders`."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
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
        key = (label, spec["dataset"]["granularity"], spec["system"]["name"])
        done = finished_at(folder)  # volatile.json (schema 2.0: the manifest)
        if key not in found or done >= found[key]["finished_at"]:
            found[key] = {"run_id": man["run_id"], "metrics": metrics, "finished_at": done}
    return found


def _cell(stat: dict[str, Any] | None, scale: float, ci: bool = False) -> str:
    if not stat or stat.get("mean") is None:
        return "-"
    fmt = "{:.1f}" if scale == 100 else "{:.2f}"
    text = fmt.format(stat["mean"] * scale)
    if ci:
        text += f" [{fmt.format(stat['ci_low'] * scale)}, {fmt.format(stat['ci_high'] * scale)}]"
    return text


def _ref(values: tuple) -> list[str]:
    return ["-" if v is None else (f"{v:.1f}" if i != 6 and i != 4 else f"{v:.2f}" if i == 4 else f"{v:.3f}")
            for i, v in enumerate(values)]  # fmt: skip


def _table(
    runs: dict,
    subset: str,
    methods: tuple[str, ...],
    refs: list[tuple[str, tuple]],
    ref_n: int = 150,
) -> list[str]:
    head = "| Method | n | " + " | ".join(c[1] for c in _COLS) + " |"
    out = [head, "|" + "---|" * (len(_COLS) + 2)]
    for m in methods:
        block = runs.get((subset, m))
        if block is None:
            continue
        stats = block["all"]
        cells = [_cell(stats[k], s, ci=k == "recovery") for k, _, s in _COLS]
        out.append(
            f"| {LABELS[m].strip()} | {stats['recovery']['n']} | " + " | ".join(cells) + " |"
        )
    for label, values in refs:
        out.append(f"| *{label}* | {ref_n} | " + " | ".join(_ref(values)) + " |")
    return out


def repair_section(source: str | Path | Iterable[Any]) -> tuple[str, set[str]]:
    """(markdown, run ids it names) for the repair runs of ``source`` (a results folder,
    or the leaderboard's run records); ('', set()) when there are none."""
    found = load_repair_runs(source)
    if not found:
        return "", set()
    lines = ["## Repair track (dependency-guided repair, issue 11)", "",
             "Defined in docs/repair.md. The offline backbone is the track's deterministic policy; "
             "95% bootstrap CI over cases on recovery. Rows in *italics* are the seed's GPT-4o "
             "figures: a reference, not comparable (other data, other agent, an LLM backbone).", ""]  # fmt: skip
    for label in sorted({k[0] for k in found}, key=lambda x: (x != "offline policy", x)):
        runs = {(sub, m): v["metrics"] for (b, sub, m), v in found.items() if b == label}
        lines += _sections(runs, label)
    ids = {v["run_id"] for v in found.values()}
    lines += ["", "Repair runs: " + ", ".join(f"`{i}`" for i in sorted(ids))]
    return "\n".join(lines) + "\n", ids


def render_repair_markdown(source: str | Path | Iterable[Any]) -> str:
    """The markdown section for the repair runs of ``source`` ('' when none)."""
    return repair_section(source)[0]


def _sections(runs: dict[tuple[str, str], dict[str, Any]], label: str) -> list[str]:
    lines = [f"Backbone: {label}.", ""]
    lines += ["### Controlled set: methods", ""]
    lines += _table(
        runs, "controlled", _MAIN, [(f"Dependency-guided repair, {REFERENCE}", _SEED_MAIN)]
    )
    lines += ["", "### Controlled set: ablations", ""]
    refs = [(f"{LABELS[m].strip()}, {REFERENCE}", v) for m, v in _SEED_ABLATIONS.items()]
    lines += _table(runs, "controlled", _ABLATIONS, refs)
    lines += ["", "### Stress set (2-4 faults per case)", ""]
    lines += _table(
        runs,
        "stress",
        _MAIN + _ABLATIONS[1:],
        [(f"Dependency-guided repair, {REFERENCE}", _SEED_STRESS)],
        50,
    )
    dgr = runs.get(("controlled", "dgr"))
    if dgr:
        lines += [
            "",
            "### Dependency-guided repair on the controlled set, by domain and fault type",
            "",
        ]
        lines += ["| Group | n | Recovery % | Recurrence % | Replay ratio % | Seed recovery % (GPT-4o, not comparable) |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        for kind, seed in (("by_domain", _SEED_DOMAIN), ("by_fault_type", _SEED_FAULT)):
            for group, stats in dgr[kind].items():
                ref = seed.get(group)
                ref_text = (
                    "-" if ref is None else f"{ref[0] if isinstance(ref, tuple) else ref:.1f}"
                )
                if isinstance(ref, tuple) and ref[1] is not None:
                    ref_text += f" (recurrence {ref[1]:.1f})"
                lines.append(f"| {group} | {stats['recovery']['n']} | {_cell(stats['recovery'], 100, True)} | "
                             f"{_cell(stats['recurrence'], 100)} | {_cell(stats['replay_ratio'], 100)} | {ref_text} |")  # fmt: skip
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    """Print the repair section for ``argv[0]`` (default ``results``)."""
    args = sys.argv[1:] if argv is None else argv
    print(render_repair_markdown(args[0] if args else "results") or "no repair runs found")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
