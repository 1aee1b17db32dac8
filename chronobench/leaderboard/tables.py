"""Rendering of leaderboard tables (Markdown for people, long-form CSV for tools)."""

from __future__ import annotations

import csv
import io
from typing import Any

from chronobench.metrics.catalog import main_metric, section
from chronobench.results.metrics_file import Breakdown, Stat, Stats

# Rows, their labels and their order come from the registrations (chronobench.registry
# entries); columns from the metric catalogue (chronobench.metrics.catalog).
SELECTION_COLS = [(m.name, m.label) for m in section("selection")]
RQ2_COLS = [(m.name, m.label) for m in section("rq2")]
RQ3_COLS = [(m.name, m.label) for m in section("rq3")]
# Tables with one column per backbone, one per metric that has a title.
BY_BACKBONE = [(m.name, m.title) for m in (*section("rq2"), *section("rq3")) if m.title]
DOCS_LINK = "[docs/metrics.md](../docs/metrics.md)"
# The RQ1 headline is the hand-written held-out set (data_builders/user_queries/).
RQ1_HEADLINE = ("locomo", "locomo_v3_heldout", ("session", "turn"))


def _selectors() -> Any:
    from chronobench.selectors import SELECTORS

    return SELECTORS


def _systems() -> Any:
    from chronobench.systems.registry import SYSTEMS

    return SYSTEMS


def _is_floor(name: str) -> bool:
    from chronobench.systems.registry import is_floor

    return is_floor(name)


def stat_cell(stat: Stat | None, scale: float = 100.0, ci: bool = True) -> str:
    return "–" if stat is None else stat.text(scale, ci)


def _n(stats: Stats, field: str) -> int:
    st = stats.get(field)
    return st.n if st is not None else 0


def count_cell(stat: Stat | None) -> str:
    """``n / distinct / clusters`` of one statistic."""
    if stat is None or not stat.n:
        return "–"
    distinct = stat.n if stat.n_distinct is None else stat.n_distinct
    clusters = "?" if stat.n_clusters is None else stat.n_clusters
    return f"{stat.n} / {distinct} / {clusters}"


def _all(systems: dict[tuple[str, str], Any], s: str, b: str) -> Stats:
    """The ``all`` statistics of one system and backbone (none when it has no run)."""
    return systems[(s, b)][0].all if (s, b) in systems else {}


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


def _mrr_label(sel: dict[str, tuple[Breakdown, str]], names: list[str]) -> str:
    depths = {sel[n][0].mrr_depth for n in names if sel[n][0].mrr_depth}
    return f"MRR@{max(depths)}" if depths else "MRR"


def _selection_md(sel: dict[str, tuple[Breakdown, str]]) -> list[str]:
    lines = ["### RQ1: version selection (no generation)", ""]
    main = main_metric("selection").name
    reg = _selectors()
    names = reg.ordered(sel)
    labels = [h if f != "mrr" else _mrr_label(sel, names) for f, h in SELECTION_COLS]
    header = ["selector", "n / clusters", *labels]
    rows = []
    for name in names:
        a = sel[name][0].all
        st = a.get(main)
        rows.append(
            [reg.label(name), f"{st.n if st else 0} / {_or(st and st.n_clusters, '?')}"]
            + [stat_cell(a.get(f)) for f, _ in SELECTION_COLS]
        )
    lines += md_table(header, rows)
    for dim in ("intent", "source"):
        groups = sorted({g for name in names for g in getattr(sel[name][0], f"by_{dim}")})
        if len(groups) < 1:
            continue
        lines.append(f"{main_metric('selection').label} by {dim} (n in parentheses):")
        lines.append("")
        rows = []
        for name in names:
            by = getattr(sel[name][0], f"by_{dim}")
            rows.append(
                [reg.label(name)]
                + [
                    f"{stat_cell(by.get(g, {}).get(main), ci=False)} ({_n(by.get(g, {}), main)})"
                    for g in groups
                ]
            )
        lines += md_table(["selector", *groups], rows)
    return lines


def _by_backbone(
    systems: dict[tuple[str, str], Any], names: list[str], backbones: list[str], field: str
) -> list[list[str]]:
    return [
        [_systems().label(s)]
        + [
            stat_cell(systems[(s, b)][0].all.get(field), ci=False) if (s, b) in systems else "–"
            for b in backbones
        ]
        for s in names
    ]


def _has(systems: dict[tuple[str, str], Any], s: str, b: str, cols: list[tuple[str, str]]) -> bool:
    a = _all(systems, s, b)
    return any(_n(a, f) for f, _ in cols)


def _rq2_detail(systems: dict[tuple[str, str], Any], names: list[str], b: str) -> list[str]:
    lines = [f"### RQ2 in detail, backbone {b} (mean [95% cluster-bootstrap CI], x100)", ""]
    main = main_metric("rq2")
    rows = []
    for s in names:
        if not _has(systems, s, b, RQ2_COLS):
            continue
        groups = systems[(s, b)][0]
        a = groups.all
        restored = (groups.restored or {}).get("selected_exact")
        rows.append(
            # Query units (the main score's) and the answerable probes behind A (qa_f1).
            [_systems().label(s), count_cell(a.get(main.name)), count_cell(a.get("qa_f1"))]
            + [stat_cell(a.get(f)) for f, _ in RQ2_COLS]
            + [stat_cell(restored, ci=False)]
        )
    header = ["method", "queries n / distinct / clusters", "A probes n / distinct / clusters"]
    lines += md_table([*header, *[h for _, h in RQ2_COLS], "restored = v*"], rows)
    lines += _leakage_note(systems, names, b)
    for dim in ("intent", "source"):
        present = [s for s in names if _has(systems, s, b, RQ2_COLS)]
        groups = sorted({g for s in present for g in getattr(systems[(s, b)][0], f"by_{dim}")})
        rows = [
            [_systems().label(s)]
            + [
                stat_cell(
                    getattr(systems[(s, b)][0], f"by_{dim}").get(g, {}).get(main.name), ci=False
                )
                for g in groups
            ]
            for s in present
        ]
        if groups and rows:
            head = [f"{main.short} by {dim}, backbone {b}:", ""]
            lines += head + md_table(["method", *groups], rows)
    return lines


def _leakage_note(systems: dict[tuple[str, str], Any], names: list[str], b: str) -> list[str]:
    """What leakage a policy reaches without a memory (the constant answer) and without
    reading the request (the other floors): a system's leakage is judged against them."""
    floors = []
    for s in names:
        label = _systems().label(s)
        leak = _all(systems, s, b).get("future_leak")
        if _is_floor(s) and leak is not None and leak.mean is not None:
            name = label[len("floor:") :] if label.startswith("floor:") else label
            floors.append(f"{name.strip()} {stat_cell(leak, ci=False)}%")
    if not floors:
        return []
    return [
        "Leakage of the floors (a guess, or a rollback that never read the request): "
        + "; ".join(floors)
        + ". A system's leakage is evidence of forgetting only below the request-blind "
        "floors'; RC-QA, not leakage, ranks systems.",
        "",
    ]


def _rq3_detail(systems: dict[tuple[str, str], Any], names: list[str], b: str) -> list[str]:
    rows = []
    for s in names:
        if not _has(systems, s, b, RQ3_COLS):
            continue
        a = systems[(s, b)][0].all
        rows.append(
            [_systems().label(s), count_cell(a.get(main_metric("rq3").name))]
            + [stat_cell(a.get(f)) for f, _ in RQ3_COLS]
        )
    if not rows:
        return []
    head = [f"### RQ3 in detail, backbone {b} (mean [95% cluster-bootstrap CI], x100)", ""]
    return head + md_table(["method", "n / distinct / clusters", *[h for _, h in RQ3_COLS]], rows)


def _systems_md(
    systems: dict[tuple[str, str], Any], backbone_keys: dict[str, Any] | None = None
) -> list[str]:
    """``backbone_keys``: column label -> table position (from the backbone's
    registration); columns without one sort by label."""
    lines: list[str] = []
    keys = backbone_keys or {}
    backbones = sorted({b for _, b in systems}, key=lambda b: keys.get(b, (True, 0.0, b)))
    names = _systems().ordered(s for s, _ in systems)
    for field, title in BY_BACKBONE:
        rows = _by_backbone(systems, names, backbones, field)
        if any(c != "–" for r in rows for c in r[1:]):
            lines += [f"### {title} (x100)", ""] + md_table(["method", *backbones], rows)
    for b in backbones:
        lines += _rq2_detail(systems, names, b)
        lines += _rq3_detail(systems, names, b)
    return lines


def _rq1_headline(tables: dict[tuple[str, str, str], Any]) -> list[str]:
    """R@1 of every selector on the hand-written held-out set, one column per granularity
    (empty when no such run is published)."""
    dataset, queries, grans = RQ1_HEADLINE
    slots = {g: tables.get((dataset, g, queries), {}).get("selection") or {} for g in grans}
    slots_meta = {g: tables.get((dataset, g, queries), {}).get("turn_gold") for g in grans}
    reg = _selectors()
    names = reg.ordered({n for sel in slots.values() for n in sel})
    if not names:
        return []
    rows = []
    for name in names:
        cells = []
        for g in grans:
            sel = slots[g].get(name)
            st = sel[0].all.get("recall_at_1") if sel else None
            cells.append(f"{stat_cell(st)} (n={st.n})" if st else "–")
        rows.append([reg.label(name), *cells])
    heads = [f"{g} granularity{_gold_note(slots_meta.get(g))}" for g in grans]
    return [
        f"## RQ1 headline: hand-written held-out requests (`{queries}`)",
        "",
        "R@1 (x100) [95% CI] of every selector on requests written by hand over all 10",
        "conversations (paraphrased, indirect, first-person, some naming a date), committed",
        "before any rule change they evaluate; see data_builders/user_queries/README.md.",
        "Template requests, below, are a test of request reading.",
        *(_GOLD_LINES if "evidence" in slots_meta.values() else []),
        "",
        *md_table(["selector", *heads], rows),
    ]


# What the evidence gold asks, said once under the headline (docs/metrics.md).
_GOLD_LINES = [
    "At turn granularity a request that names an event cuts at the message that states it",
    "(evidence gold); one that names a whole conversation or only a date cuts at the",
    "session's edge. The session gold (every request at the session's edge) is in",
    "docs/nl_parse.md.",
]


def _gold_note(gold: str | None) -> str:
    """`` (evidence gold)`` after a turn-granularity title scored under that gold."""
    return " (evidence gold)" if gold == "evidence" else ""


def render_markdown(tables: dict[tuple[str, str, str], Any]) -> str:
    """The whole leaderboard as Markdown."""
    lines = [
        "# chronobench leaderboard",
        "",
        "Built by `python -m chronobench leaderboard` from finished runs; every figure is a",
        "weighted mean x100 with, where shown, a 95% bootstrap CI that resamples",
        "conversations (seed 0, 1,000 resamples); repeated probes (same question, same v*)",
        "count once, and counts read n / distinct / clusters. Metric definitions and the",
        f'decisions behind them: {DOCS_LINK}. Floors (rows starting with "floor:") show',
        "what a trivial policy earns: a figure a floor reaches is no evidence of memory.",
        "",
    ]
    lines += _rq1_headline(tables)
    for dataset, gran, queries in sorted(tables, key=lambda k: (k[0], k[1], k[2] != "built", k[2])):
        slot = tables[(dataset, gran, queries)]
        which = (
            ", template requests: a test of request reading"
            if queries == "built"
            else f", hand-written requests `{queries}`"
        )
        which += ", evidence gold" if slot.get("turn_gold") == "evidence" else ""
        lines += [f"## {dataset} ({gran} granularity{which})", ""]
        if slot["selection"]:
            lines += _selection_md(slot["selection"])
        if slot["systems"]:
            lines += _systems_md(slot["systems"], slot.get("backbones"))
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
            "n_distinct",
            "n_clusters",
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
            flat = [("all", groups.all)]
            for dim, by in groups.groups():
                flat += [(f"{dim}={g}", st) for g, st in sorted(by.items())]
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
                            st.n,
                            _or(st.n_distinct, st.n),
                            _or(st.n_clusters, ""),
                            _num(st.mean),
                            _num(st.ci_low),
                            _num(st.ci_high),
                            rid,
                            " ".join(
                                str((slot.get("provenance") or {}).get(x) or "")
                                for x in rid.split(", ")
                            ),
                        ]
                    )
    return buf.getvalue()


def _or(x: Any, default: Any) -> Any:
    """``x``, else ``default`` where a file left it out (``None``)."""
    return default if x is None else x


def _num(x: Any) -> str:
    return "" if x is None else f"{x:.6f}"
