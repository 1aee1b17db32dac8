"""``chronobench view``: the static results site (no server; opens from disk).

``index.html``: per build (see :mod:`chronobench.viewer.collect`; the tiny fixture is
never pooled with real data) one summary table of the headlines with their 95% CIs and
the best floor beside each, then the plots (RC-QA with intervals per system against the
floors, RQ3 last-session coverage, R@1 by intent and by request set, the memory systems'
restore fidelity) and links to each request set's drill-down. ``runs.html`` and
``runs/<run-id>.html``: every run and its metrics. ``queries/<set>.html`` (one page per
system past ``drill.SPLIT_ROWS`` rows: ``<set>~<i>.html``) and
``q/<set>/<query>.html``: the drill-down (:mod:`chronobench.viewer.drill`).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from chronobench.viewer import drill, svg
from chronobench.viewer.collect import Build, ViewRun, builds, collect
from chronobench.viewer.html import e, link, page, table, tag
from chronobench.viewer.summary import (
    Row,
    generation_runs,
    headline_rows,
    headline_strip,
    is_floor,
    r1_by,
    selector_label,
    system_label,
    track_plots,
)

#: What each headline measures, in a line (docs/metrics.md has the exact rules); the
#: strip links its questions here. Section prefix -> (anchor, definition).
DEFINITIONS = {
    "RQ1": ("def-rq1", "RQ1 R@1: the share of rollback requests whose top-ranked version is "
            "the gold v* (hand-written held-out requests unless the section names others)."),
    "RQ2": ("def-rq2", "RQ2 RC-QA: per request, the harmonic mean of what the restored state "
            "keeps (questions answerable at v*) and forgets (questions whose evidence lies "
            "after v*), over the known questions only; 0 for knowing nothing, never "
            "forgetting or forgetting everything."),
    "RQ3": ("def-rq3", "RQ3 last-session coverage: the share of the newest restored session's "
            "new words a 150-word summary says; 0 for a summary that leaks a later event."),
    "RQ4": ("def-rq4", "RQ4 headline: per anchor, the harmonic mean of forget, keep, turn "
            "precision and turn recall of a \"forget what I said about X\" request."),
    "Memory systems": ("def-peers", "Memory systems: each system's own search picks the "
                       "version (own R@1) and its own rollback restores it (own RC-QA)."),
    "Repair": ("def-repair", "Repair recovery: the share of controlled or stress cases whose "
               "corrupted memory the method restores."),
}  # fmt: skip


def _definition_anchor(section: str) -> str | None:
    return next((a for k, (a, _) in DEFINITIONS.items() if section.startswith(k)), None)


def _definitions() -> str:
    items = "".join(f'<li id="{a}">{e(text)}</li>' for a, text in DEFINITIONS.values())
    return (
        f'<h2 class="defs" id="definitions">Definitions</h2><p class="note">Every figure is x100, with '
        f"its 95% cluster-bootstrap interval over conversations.</p><ul>{items}</ul>"
    )


def _named(kind: str, label: str) -> str:
    """``floor: restore 60%...`` once, however the row's own label starts."""
    return label if label.startswith(f"{kind}:") else f"{kind}: {label}"


def strip_table(rows: list[Row]) -> str:
    """The headline strip: per question, who leads, against what, by how much, and
    whether that lead is established (the 95% intervals do not overlap)."""
    cells, attrs = [], []
    for s in headline_strip(rows):
        other = (
            f"{e(s.other.stat.text() if s.other.stat else '–')} "
            f"<span class=note>{e(_named(s.other_kind, s.other.label))}</span>"
            if s.other
            else "–"
        )
        gap = "–" if s.gap is None else f"{s.gap:+.1f}"
        verdict = {
            True: "overlap: not established",
            False: "apart",
            None: "no interval",
        }[s.overlap]
        anchor = _definition_anchor(s.section)
        question = link(f"#{anchor}", s.section) if anchor else e(s.section)
        cells.append([question, f"{e(s.best.label)} {e(s.best.stat.text())}", other,
                      e(gap), e(verdict)])  # fmt: skip
        attrs.append('class="overlap"' if s.overlap else "")
    if not cells:
        return ""
    return table(
        ["question", "best system x100 [95% CI]", "best floor (or runner-up)", "gap",
         "intervals"],
        cells,
        attrs='class="strip"',
        row_attrs=attrs,
    )  # fmt: skip


def _summary_table(rows: list[Row]) -> str:
    cells, attrs, last = [], [], None
    for r in rows:
        if r.section != last:
            cells.append([f"<b>{e(r.section)}</b>", "", "", ""])
            attrs.append('class="section"')
            last = r.section
        label = link(f"runs/{r.run_id}.html", r.label) if r.run_id else e(r.label)
        floor = (
            f"{e(r.floor[1].text())} <span class=note>{e(r.floor[0])}</span>" if r.floor else "–"
        )
        n = r.stat.n if r.stat and r.stat.n is not None else None
        cells.append([label, e(r.stat.text() if r.stat else "–"), e(n), floor])
        attrs.append('class="floor"' if r.is_floor else "")
    return table(
        ["row", "figure x100 [95% CI]", "n", "best floor [95% CI]"],
        cells,
        attrs='class="summary"',
        row_attrs=attrs,
        num=(1, 2),
    )


def _bars(build: Build, metric: str, title: str) -> str:
    runs = generation_runs(build)
    bars = []
    for name in sorted(runs, key=lambda s: (is_floor(s), _order(s))):
        st = ((runs[name].metrics.get("probes") or {}).get("all") or {}).get(metric)
        if not st or st.get("mean") is None:
            continue
        bars.append(
            svg.Bar(
                system_label(name),
                100 * st["mean"],
                None if st.get("ci_low") is None else 100 * st["ci_low"],
                None if st.get("ci_high") is None else 100 * st["ci_high"],
                floor=is_floor(name),
            )
        )
    return svg.interval_bars(title, bars) if bars else ""


def _order(name: str) -> tuple[bool, float, str]:
    from chronobench.systems.registry import SYSTEMS

    try:
        return SYSTEMS.sort_key(name)
    except (KeyError, ValueError):
        return (True, 0.0, name)


def _plots(build: Build) -> str:
    out = [
        _bars(
            build, "rc_qa", "RQ2 RC-QA x100 per system, 95% CI (grey: floors; dashed: best floor)"
        ),
        _bars(build, "last_session_coverage", "RQ3 last-session coverage x100 per system, 95% CI"),
    ]
    for dim, title in (
        ("intent", "RQ1 R@1 x100 by intent"),
        ("set", "RQ1 R@1 x100 by request source (templates, each hand-written set)"),
    ):
        series, rows = r1_by(build, dim)
        if rows:
            out.append(svg.grouped_bars(title, rows, series))
    out += track_plots(build)
    return "".join(x for x in out if x)


def _build_section(build: Build, groups: list[drill.Group]) -> str:
    local = sum(1 for r in build.runs if r.where == "local")
    body = [f'<h2 id="{e(build.slug)}">{e(build.title)}</h2>']
    if build.fixture:
        body.append(
            '<p class="warn">A test fixture (a few hand-written sessions): its figures test '
            "the code, they are no result.</p>"
        )
    body.append(
        f'<p class="note">{len(build.runs)} runs ({len(build.runs) - local} published, '
        f"{local} local only).</p>"
    )
    rows = headline_rows(build)
    if rows:
        body.append(strip_table(rows))
        body.append(_summary_table(rows))
    body.append(_plots(build))
    if groups:
        items = "".join(
            f"<li>{link(f'queries/{g.slug}.html', g.title)} ({len(g.by_query)} requests)</li>"
            for g in groups
        )
        body.append(f"<h3>Per-query drill-down</h3><ul class=drill>{items}</ul>")
    else:
        body.append(
            '<p class="note">No per-query files in these runs (runs made before the '
            "drill-down existed): rerun a cell to get one.</p>"
        )
    return "".join(body)


def _headline(run: ViewRun) -> str:
    m = run.metrics
    rc = ((m.get("probes") or {}).get("all") or {}).get("rc_qa")
    if rc and rc.get("mean") is not None:
        return f"RC-QA {100 * rc['mean']:.1f}"
    sel = m.get("selection") or {}
    if sel:
        best = max(
            ((s, (v.get("all") or {}).get("recall_at_1") or {}) for s, v in sel.items()),
            key=lambda x: x[1].get("mean") or 0.0,
        )
        if best[1].get("mean") is not None:
            return f"best R@1 {100 * best[1]['mean']:.1f} ({selector_label(best[0])})"
    rec = (m.get("all") or {}).get("recovery")
    if rec and rec.get("mean") is not None:
        return f"recovery {100 * rec['mean']:.1f}"
    return ""


def _runs_page(all_builds: list[Build]) -> str:
    body = []
    for b in all_builds:
        rows = [
            [
                link(f"runs/{r.run_id}.html", r.run_id),
                e(r.kind),
                e(system_label(r.system) if r.system else "selectors"),
                e(f"{r.granularity}, {r.queries}"),
                tag(r.where),
                e(_headline(r)),
            ]
            for r in sorted(b.runs, key=lambda r: (r.kind, r.run_id))
        ]
        body.append(f"<h2>{e(b.title)}</h2>")
        body.append(table(["run", "kind", "system", "data", "where", "headline"], rows))
    return page("Runs", "".join(body))


def _stat_rows(block: dict[str, Any], prefix: str = "") -> list[list[str]]:
    rows = []
    for k, v in sorted(block.items()):
        if isinstance(v, dict) and "mean" in v:
            ci = ""
            if v.get("ci_low") is not None:
                ci = f"[{v['ci_low']:.4g}, {v['ci_high']:.4g}]"
            rows.append(
                [
                    e(prefix + k),
                    e(f"{v['mean']:.4g}" if v["mean"] is not None else "–"),
                    e(ci),
                    e(v.get("n")),
                ]
            )
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            rows.append([e(prefix + k), e(f"{v:.4g}"), "", ""])
    return rows


def _run_page(run: ViewRun, groups: dict[tuple[str, str], drill.Group]) -> str:
    facts = [
        ["kind", e(run.kind)],
        ["system", e(system_label(run.system) if run.system else "–")],
        ["backbone", e(run.backbone)],
        ["dataset", e(f"{run.dataset}, {run.granularity} granularity, requests {run.queries}")],
        ["source", e(run.build + (" (test fixture)" if run.fixture else ""))],
        ["built dataset", e(run.data_build)],
        ["where", e(f"{run.where}: {run.folder}")],
        ["task params", e(run.params or "–")],
    ]
    body = [table(["", ""], facts)]
    g = groups.get((run.data_build, run.queries))
    if g is not None and run.query_file is not None:
        who = system_label(run.system) if run.system and run.kind != "selection" else ""
        who += run.subset if who else ""
        anchor = f"#system={who}" if who else ""
        body.append(f"<p>{link(f'../queries/{g.slug}.html{anchor}', 'Per-query drill-down')}</p>")
    m = run.metrics
    sections: list[tuple[str, dict[str, Any]]] = []
    if (m.get("probes") or {}).get("all"):
        sections.append(("RQ2/RQ3: every scored probe", m["probes"]["all"]))
    for name, sel in sorted((m.get("selection") or {}).items()):
        sections.append((f"RQ1 selector {selector_label(name)}", sel.get("all") or {}))
    sections += run.details
    if isinstance(m.get("all"), dict) and not m.get("probes"):
        sections.append(("all cases", m["all"]))
    for title, block in sections:
        rows = _stat_rows(block)
        if rows:
            body.append(f"<h2>{e(title)}</h2>")
            body.append(table(["metric", "mean", "95% CI", "n"], rows, num=(1, 3)))
    return page(f"Run {run.run_id}", "".join(body), root="../")


def build_site(results_dir: Path, out_dir: Path) -> dict[str, Any]:
    """Write the site for ``results_dir`` into ``out_dir``; returns counts and seconds."""
    t0 = time.perf_counter()
    runs = collect(results_dir)
    all_builds = builds(runs)
    out_dir = Path(out_dir)
    for sub in ("runs", "queries", "q"):
        shutil.rmtree(out_dir / sub, ignore_errors=True)
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    sections, pages = [], 0
    by_key: dict[tuple[str, str], drill.Group] = {}
    for b in all_builds:
        gs = drill.groups(b)
        for g in gs:
            pages += drill.write_group(g, out_dir)
            by_key[(g.data_build, g.queries)] = g
        sections.append(_build_section(b, gs))
    for r in runs:
        (out_dir / "runs" / f"{r.run_id}.html").write_text(_run_page(r, by_key), encoding="utf-8")
    intro = (
        f'<p class="note">From {e(Path(results_dir).resolve())}: {len(runs)} runs on '
        f"{len(all_builds)} builds. Figures x100 with 95% bootstrap CIs over conversations; "
        "each build (one built dataset) is its own section and no chart mixes two. "
        "Floors are what a trivial or request-blind policy earns: a figure at or below the "
        "best floor is no evidence of memory. "
        f"{link('#definitions', 'Definitions')} below; in full: docs/metrics.md.</p>"
    )
    if not runs:
        intro += '<p class="warn">No finished runs here: run `python -m chronobench run`.</p>'
    toc = "".join(f"<li>{link('#' + b.slug, b.title)}</li>" for b in all_builds)
    body = intro + (f"<ul>{toc}</ul>" if toc else "") + "".join(sections) + _definitions()
    (out_dir / "index.html").write_text(page("chronobench results", body), encoding="utf-8")
    (out_dir / "runs.html").write_text(_runs_page(all_builds), encoding="utf-8")
    pages += 2 + len(runs)
    return {
        "runs": len(runs),
        "builds": len(all_builds),
        "pages": pages,
        "seconds": time.perf_counter() - t0,
    }
