"""Rendering of leaderboard tables (Markdown for people, long-form CSV for tools)."""

from __future__ import annotations

import csv
import io
from typing import Any

SELECTOR_ORDER = ["bm25", "dense", "hybrid", "chronomem_norerank", "chronomem"]
SELECTOR_LABEL = {
    "bm25": "BM25-only",
    "dense": "Dense-only",
    "hybrid": "Hybrid (RRF)",
    "chronomem_norerank": "ChronoMem without reranker (ablation)",
    "chronomem": "ChronoMem (hybrid + rerank + intent)",
}
SYSTEM_ORDER = [
    "prompt_only",
    "full_history",
    "rag_only",
    "chronomem",
    "chronomem_oracle",
    "no_memory",
    "always_abstain",
]
SYSTEM_LABEL = {
    "prompt_only": "Prompt-only",
    "full_history": "Full-history",
    "rag_only": "RAG-only",
    "chronomem": "ChronoMem",
    "chronomem_oracle": "ChronoMem (oracle v*)",
    "no_memory": "floor: no memory",
    "always_abstain": "floor: always abstain",
}
SELECTION_COLS = [
    ("recall_at_1", "R@1"),
    ("recall_at_k", "R@k"),
    ("scope_at_k", "Scope@k/2"),
    ("mrr", "MRR"),
]
QA_COLS = [
    ("rc_qa", "RC-QA (headline)"),
    ("qa_f1", "QA F1 (answerable)"),
    ("qa_f1_answered", "QA F1 (cat 1-4)"),
    ("qa_abstained", "false abstain"),
    ("future_abstain", "future abstain"),
    ("future_leak", "leakage"),
    ("rouge1", "ROUGE-1"),
    ("summary_leakage", "summary leakage"),
]


def _order(keys: list[str], preferred: list[str]) -> list[str]:
    return [k for k in preferred if k in keys] + sorted(k for k in keys if k not in preferred)


def _cell(stat: dict[str, Any] | None, scale: float = 100.0, ci: bool = True) -> str:
    if not stat or stat.get("mean") is None:
        return "–"
    text = f"{stat['mean'] * scale:.1f}"
    if ci and stat.get("ci_low") is not None:
        text += f" [{stat['ci_low'] * scale:.1f}, {stat['ci_high'] * scale:.1f}]"
    return text


def _n(groups: dict[str, Any], field: str) -> int:
    return int((groups.get(field) or {}).get("n") or 0)


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


def _selection_md(sel: dict[str, Any]) -> list[str]:
    lines = ["### RQ1: version selection (no generation)", ""]
    names = _order(list(sel), SELECTOR_ORDER)
    header = ["selector", "n"] + [h for _, h in SELECTION_COLS]
    rows = []
    for name in names:
        a = sel[name][0]["all"]
        rows.append(
            [SELECTOR_LABEL.get(name, name), str(_n(a, "recall_at_1"))]
            + [_cell(a.get(f)) for f, _ in SELECTION_COLS]
        )
    lines += _md_table(header, rows)
    for dim in ("intent", "source"):
        groups = sorted({g for name in names for g in sel[name][0].get(f"by_{dim}", {})})
        if len(groups) < 1:
            continue
        lines.append(f"R@1 by {dim} (n in parentheses):")
        lines.append("")
        rows = []
        for name in names:
            by = sel[name][0].get(f"by_{dim}", {})
            rows.append(
                [SELECTOR_LABEL.get(name, name)]
                + [
                    f"{_cell(by.get(g, {}).get('recall_at_1'), ci=False)} ({_n(by.get(g, {}), 'recall_at_1')})"
                    for g in groups
                ]
            )
        lines += _md_table(["selector", *groups], rows)
    return lines


def _systems_md(systems: dict[tuple[str, str], Any]) -> list[str]:
    lines: list[str] = []
    backbones = sorted({b for _, b in systems})
    names = _order(sorted({s for s, _ in systems}), SYSTEM_ORDER)
    for field, title in (
        ("rc_qa", "RQ2: rollback-consistent QA (headline, %)"),
        ("qa_f1", "RQ2: QA F1 on answerable probes, LoCoMo scoring incl. category 5 (%)"),
        ("qa_f1_answered", "RQ2: QA F1 on probes with a gold answer (categories 1-4, %)"),
        ("future_leak", "RQ2: leakage on future-evidence probes (%, lower is better)"),
        ("rouge1", "RQ3: rollback-consistent summarisation, ROUGE-1 (x100)"),
    ):
        rows = []
        for s in names:
            rows.append(
                [SYSTEM_LABEL.get(s, s)]
                + [
                    _cell(systems[(s, b)][0].get("all", {}).get(field), ci=False)
                    if (s, b) in systems
                    else "–"
                    for b in backbones
                ]
            )
        lines += [f"### {title}", ""] + _md_table(["method", *backbones], rows)
    for b in backbones:
        lines += [f"### All probe metrics, backbone {b} (mean [95% CI], x100)", ""]
        rows = []
        for s in names:
            if (s, b) not in systems:
                continue
            a = systems[(s, b)][0].get("all", {})
            restored = systems[(s, b)][0].get("restored", {}).get("selected_exact")
            rows.append(
                [SYSTEM_LABEL.get(s, s), str(_n(a, "rc_qa"))]
                + [_cell(a.get(f)) for f, _ in QA_COLS]
                + [_cell(restored, ci=False)]
            )
        lines += _md_table(["method", "n (QA)", *[h for _, h in QA_COLS], "restored = v*"], rows)
        for dim in ("intent", "source"):
            groups = sorted(
                {
                    g
                    for s in names
                    if (s, b) in systems
                    for g in systems[(s, b)][0].get(f"by_{dim}", {})
                }
            )
            rows = []
            for s in names:
                if (s, b) not in systems:
                    continue
                by = systems[(s, b)][0].get(f"by_{dim}", {})
                rows.append(
                    [SYSTEM_LABEL.get(s, s)]
                    + [_cell(by.get(g, {}).get("rc_qa"), ci=False) for g in groups]
                )
            if groups:
                lines += [f"RC-QA by {dim}, backbone {b}:", ""] + _md_table(
                    ["method", *groups], rows
                )
    return lines


def render_markdown(tables: dict[tuple[str, str], Any]) -> str:
    """The whole leaderboard as Markdown."""
    lines = [
        "# chronobench leaderboard",
        "",
        "Built by `python -m chronobench leaderboard` from `results/runs/*`; every figure is a",
        "mean over the run's samples, with a 95% bootstrap CI where shown (seed 0, 1,000",
        "resamples). Metric definitions: docs in `chronobench/metrics`. Floors show what",
        "abstaining or answering without memory earns.",
        "",
    ]
    for dataset, gran, queries in sorted(tables, key=lambda k: (k[0], k[1], k[2] != "built", k[2])):
        slot = tables[(dataset, gran, queries)]
        base, _, variant = queries.partition("; ")  # variant: what differs in the spec
        which = "" if base == "built" else f", user-written requests `{base}`"
        which += f"; {variant}" if variant else ""
        lines += [f"## {dataset} ({gran} granularity{which})", ""]
        if slot["selection"]:
            lines += _selection_md(slot["selection"])
        if slot["systems"]:
            lines += _systems_md(slot["systems"])
        ids = sorted(
            {rid for v in slot["selection"].values() for rid in [v[1]]}
            | {rid for v in slot["systems"].values() for rid in v[1].split(", ")}
        )
        lines += ["Runs: " + ", ".join(f"`{i}`" for i in ids), ""]
    return "\n".join(lines).rstrip() + "\n"


def render_csv(tables: dict[tuple[str, str], Any]) -> str:
    """Long-form CSV: one row per (dataset, granularity, method, backbone, group, metric)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "dataset",
            "granularity",
            "queries",
            "kind",
            "method",
            "backbone",
            "group",
            "metric",
            "n",
            "mean",
            "ci_low",
            "ci_high",
            "run_ids",
            "samples_sha256",
        ]
    )
    for dataset, gran, queries in sorted(tables):
        slot = tables[(dataset, gran, queries)]
        entries = [
            ("selection", name, "", groups, rid)
            for name, (groups, rid) in slot["selection"].items()
        ]
        entries += [
            ("system", s, b, groups, rid) for (s, b), (groups, rid) in slot["systems"].items()
        ]
        for kind, method, backbone, groups, rid in sorted(
            entries, key=lambda e: (e[0], e[1], e[2])
        ):
            flat = [("all", groups.get("all", {}))]
            for gk in sorted(k for k in groups if k.startswith("by_")):
                flat += [(f"{gk[3:]}={g}", st) for g, st in sorted(groups[gk].items())]
            for group, stats in flat:
                for metric in sorted(stats):
                    st = stats[metric]
                    w.writerow(
                        [
                            dataset,
                            gran,
                            queries,
                            kind,
                            method,
                            backbone,
                            group,
                            metric,
                            st.get("n"),
                            _num(st.get("mean")),
                            _num(st.get("ci_low")),
                            _num(st.get("ci_high")),
                            rid,
                            " ".join(
                                str((slot.get("provenance") or {}).get(x) or "")
                                for x in rid.split(", ")
                            ),
                        ]
                    )
    return buf.getvalue()


def _num(x: Any) -> str:
    return "" if x is None else f"{x:.6f}"
