"""The per-query drill-down: a list page per request set (filterable by system, intent
and outcome) and a page per query: the request, the version each system or selector
chose against the gold (session, date, summary), and every scored question with the
answer, the gold, the score, its label and leakage flags. Read from the runs'
per-query files (:mod:`chronobench.results.per_query`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from chronobench.results.per_query import QueryFile
from chronobench.viewer.collect import Build, ViewRun
from chronobench.viewer.html import FILTER_JS, e, link, page, select, table, tag
from chronobench.viewer.summary import selector_label, system_label


@dataclass
class Entry:
    """One system's or selector's answer to one query (from a per-query file's line)."""

    run: ViewRun
    who: str  # the system or the selector
    label: str
    line: dict[str, Any]  # the query line
    view: dict[str, Any]  # the selector's part of it, or the line itself (the system)
    file: QueryFile
    is_selector: bool = False


def entries(run: ViewRun, qf: QueryFile, line: dict[str, Any]) -> list[Entry]:
    """A query line's entries: each RQ1 selector's, then the run's system's."""
    out = [
        Entry(run, name, selector_label(name), line, part, qf, True)
        for name, part in (line.get("selectors") or {}).items()
    ]
    if "probes" in line:
        who = str(run.system)
        label = system_label(who) + run.subset
        out.append(Entry(run, who, label, line, line, qf))
    return out


@dataclass
class Group:
    """The queries of one request set at one granularity in one build."""

    build: Build
    data_build: str
    granularity: str
    queries: str
    by_query: dict[str, list[Entry]] = field(default_factory=dict)

    @property
    def slug(self) -> str:
        return f"{self.build.slug}-{self.data_build}-{self.granularity}-{self.queries}"

    @property
    def title(self) -> str:
        reqs = "template requests" if self.queries == "built" else f"requests {self.queries}"
        return f"{self.build.title}: {self.granularity} granularity, {reqs}"

    def page_of(self, query_id: str) -> str:
        """The query page's path under the site's top."""
        h = hashlib.sha1(query_id.encode("utf-8")).hexdigest()[:12]
        return f"q/{self.slug}/{h}.html"


def groups(build: Build) -> list[Group]:
    """The build's request sets that have per-query files, with their entries: one group
    per built dataset and request set (a run on a subset of it joins its group)."""
    out: dict[tuple[str, str], Group] = {}
    for run in sorted(build.runs, key=lambda r: (r.kind != "selection", r.run_id)):
        if run.query_file is None:
            continue
        qf = QueryFile(run.query_file)
        key = (run.data_build, run.queries)
        g = out.setdefault(key, Group(build, run.data_build, run.granularity, run.queries))
        for line in qf.queries:
            g.by_query.setdefault(line["query_id"], []).extend(entries(run, qf, line))
    for g in out.values():
        for found in g.by_query.values():
            found.sort(key=_entry_order)
    return sorted(
        out.values(),
        key=lambda g: (g.granularity != "session", g.queries != "built", g.queries, g.granularity),
    )


def _entry_order(en: Entry) -> tuple[Any, ...]:
    """Selectors first, then systems, each in registry order; floors last."""
    return (*_registry_order(en.is_selector, en.who, en.label), en.run.run_id)


@cache
def _registry_order(selector: bool, who: str, label: str) -> tuple[Any, ...]:
    from chronobench.selectors import SELECTORS
    from chronobench.systems.registry import SYSTEMS

    reg = SELECTORS if selector else SYSTEMS
    try:
        key = reg.sort_key(who)
    except (KeyError, ValueError):
        key = (True, 0.0, who)
    from chronobench.systems.registry import is_floor

    return (not selector, not selector and is_floor(who), key)


def _version(qf: QueryFile, stream: str, v: int | None) -> str:
    if v is None:
        return "none (no rollback)"
    d = qf.version(stream, v)
    where = f"session {d['session']}" if d.get("session") is not None else ""
    when = f", {d['date']}" if d.get("date") else ""
    return f"v{v}" + (f" ({where}{when})" if where or when else "")


def _score(entry: Entry) -> str:
    s = entry.view.get("scores") or {}
    if entry.is_selector:
        return f"R@1 {100 * float(s.get('recall_at_1', 0)):.0f}"
    if "rc_qa" in s:
        return f"RC-QA {100 * s['rc_qa']:.1f}"
    return "–"


#: Rows of the drill-down list drawn at once (the rest behind previous / next).
PAGE_ROWS = 200
#: A list longer than this is written one page per system or selector: one 7 MB page
#: of 12,590 rows took the browser 17-22 s to open on a loaded machine.
SPLIT_ROWS = 3000


def list_pages(group: Group) -> dict[str, str]:
    """``{label: list page file name}``: one page for the whole list, or, past
    :data:`SPLIT_ROWS` rows, one page per system or selector (the first under the
    group's own name), so the browser never loads the 12,590 rows of a LoCoMo list."""
    labels: dict[str, int] = {}
    for found in group.by_query.values():
        for en in found:
            labels[en.label] = labels.get(en.label, 0) + 1
    if sum(labels.values()) <= SPLIT_ROWS:
        return dict.fromkeys(labels, f"{group.slug}.html")
    return {
        label: f"{group.slug}.html" if i == 0 else f"{group.slug}~{i}.html"
        for i, label in enumerate(labels)
    }


def _system_select(pages: dict[str, str], only: str) -> str:
    """The system filter of a list split by system: choosing another opens its page."""
    opts = "".join(
        f'<option value="{e(label)}"'
        + (" selected" if label == only else f' data-page="{e(page)}"')
        + f">{e(label)}</option>"
        for label, page in pages.items()
    )
    return f'<label>system <select data-col="system" id="f-system">{opts}</select></label>'


def list_page(group: Group, root: str = "../", only: str | None = None) -> str:
    """The group's drill-down list (one row per system or selector and query); with
    ``only``, that system's or selector's rows (a list split by :func:`list_pages`)."""
    rows, attrs = [], []
    systems, intents, outcomes = set(), set(), set()
    for qid in sorted(group.by_query):
        for en in group.by_query[qid]:
            if only is not None and en.label != only:
                continue
            ln, vw = en.line, en.view
            systems.add(en.label)
            intents.add(str(ln.get("intent")))
            outcomes.add(str(vw.get("outcome")))
            leaks = vw.get("leaks")
            rows.append(
                [
                    e(en.label),
                    link(root + group.page_of(qid) + f"#{en.who}", qid),
                    e(ln.get("request")),
                    e(ln.get("intent")),
                    e(ln.get("gold")),
                    e(vw.get("chosen")),
                    tag(str(vw.get("outcome")), str(vw.get("outcome"))),
                    e(_score(en)),
                    tag(str(leaks), "leak") if leaks else ("0" if leaks == 0 else ""),
                ]
            )
            attrs.append(
                f'data-system="{e(en.label)}" data-intent="{e(ln.get("intent"))}" '
                f'data-outcome="{e(vw.get("outcome"))}"'
            )
    pages = list_pages(group)
    by_system = (
        _system_select(pages, only)
        if only is not None
        else select("system", "system", sorted(systems))
    )
    filters = (
        '<p class="filters">'
        + by_system
        + select("intent", "intent", sorted(intents))
        + select("outcome", "outcome", sorted(outcomes))
        + f' <span class="note"><span id="shown">{len(rows)}</span> of {len(rows)} match</span></p>'
    )
    # A long list is drawn a page at a time: laying out all 11,790 rows of the LoCoMo
    # session list took the browser about 5 s; the rows not on the page stay hidden.
    pager = (
        f'<p id="pager" class="filters" data-size="{PAGE_ROWS}" hidden>'
        '<button id="prev" type="button">previous</button> page <span id="page"></span> '
        f'<button id="next" type="button">next</button> ({PAGE_ROWS} rows a page)</p>'
    )
    body = (
        '<p class="note">One row per system (or RQ1 selector) and rollback request. '
        "Outcome: the version chosen against the gold v* (exact, early, late, none). "
        "A request opens its page: every system's version and answers side by side.</p>"
        + filters
        + pager
        + table(
            [
                "system",
                "query",
                "request",
                "intent",
                "gold v*",
                "chosen",
                "outcome",
                "score",
                "leaks",
            ],
            rows,
            attrs='id="queries"',
            row_attrs=attrs,
            num=(4, 5),
        )
    )
    return page(f"Queries: {group.title}", body, root=root, script=FILTER_JS)


def probe_rows(qf: QueryFile, line: dict[str, Any]) -> list[list[str]]:
    """The scored questions of a query line as table cells (escaped)."""
    rows = []
    stream = str(line["stream_id"])
    for p in line.get("probes") or []:
        flags = ", ".join(p.get("leak") or [])
        score = p.get("score")
        label, question, gold = _probe_cells(qf, stream, p)
        rows.append(
            [
                label,
                question,
                e(p.get("answer")),
                gold,
                ("–" if score is None else f"{100 * float(score):.0f}")
                + (f" <span class=note>{e(p.get('metric'))}</span>" if p.get("metric") else ""),
                tag(flags, "leak") if flags else "",
            ]
        )
    return rows


def _probe_cells(qf: QueryFile, stream: str, p: dict[str, Any]) -> tuple[str, str, str]:
    """A probe's label, question and gold cells, escaped once per file (every system
    and query of a stream shows the same ones)."""
    label = str(p.get("label"))
    known = "" if "known" not in p else (" (known)" if p["known"] else " (not known)")
    sessions = tuple(p.get("sessions") or ())
    key = (stream, str(p.get("item")), label, known, sessions)
    cache = qf.__dict__.setdefault("_cells", {})
    if key not in cache:
        cache[key] = (
            tag(label + known, label),
            e(qf.item(stream, str(p.get("item"))).get("question")),
            e(qf.gold(stream, p)),
        )
    return cache[key]


def query_page(group: Group, query_id: str, root: str = "../../") -> str:
    """One query's page (see the module)."""
    found = group.by_query[query_id]
    first = found[0]
    ln, qf = first.line, first.file
    stream = str(ln["stream_id"])
    gold = ln.get("gold")
    gd = qf.version(stream, gold)
    head = (
        f"<p><b>Request:</b> <q id=request>{e(ln.get('request'))}</q></p>"
        f"<p>{tag(str(ln.get('intent')))} {tag(str(ln.get('source')))} "
        f'<span class="note">{e(query_id)} · stream {e(stream)}</span></p>'
        f"<p id=gold><b>Gold v*:</b> {e(_version(qf, stream, gold))}: {e(gd.get('summary'))}</p>"
    )
    rows = []
    for en in group.by_query[query_id]:
        chosen = en.view.get("chosen")
        cd = en.file.version(stream, chosen)
        rows.append(
            [
                link(f"#{en.who}", en.label) if not en.is_selector else e(en.label),
                "RQ1 selector" if en.is_selector else "system",
                e(_version(en.file, stream, chosen)),
                tag(str(en.view.get("outcome")), str(en.view.get("outcome"))),
                e(_score(en)),
                e(cd.get("summary") if chosen != gold else "(the gold version)"),
            ]
        )
    body = (
        head
        + "<h2>Version chosen</h2>"
        + table(
            [
                "system / selector",
                "kind",
                "chosen",
                "outcome",
                "score",
                "summary of the chosen version",
            ],
            rows,
            attrs='id="chosen"',
        )
    )
    systems = [en for en in found if not en.is_selector]
    if systems:
        body += "<h2>Questions and answers</h2>"
        body += (
            '<p class="note">Only the scored questions (the query\'s labels: keep = evidence '
            "in the session at v*, forget = evidence just after it, known = the reference "
            "reader answers it at the last version, so it counts for RC-QA). Every system "
            "was asked the whole battery; the rest counts for nothing.</p>"
        )
    for i, en in enumerate(systems):
        sc = en.line.get("scores") or {}
        parts = ", ".join(f"{k} {100 * float(v):.1f}" for k, v in sc.items())
        body += (
            f'<details id="{e(en.who)}"{" open" if i == 0 else ""}><summary><b>{e(en.label)}</b>: '
            f"chose {e(_version(en.file, stream, en.line.get('chosen')))}"
            f"{' · ' + e(parts) if parts else ''} · "
            f"{link(root + 'runs/' + en.run.run_id + '.html', 'run')}</summary>"
            + table(
                ["label", "question", "answer", "gold", "score", "leak"],
                probe_rows(en.file, en.line),
                attrs='class="probes"',
            )
            + "</details>"
        )
    return page(f"Query: {ln.get('request')}", body, root=root, script=_OPEN_LINKED)


# A link from the drill-down list names its system (``...html#rag_only``): that system's
# answers open expanded, whichever system the page lists first.
_OPEN_LINKED = (
    "function openLinked(){var d=location.hash&&document.getElementById("
    "decodeURIComponent(location.hash.slice(1)));"
    "if(d&&d.tagName==='DETAILS'){d.open=true;d.scrollIntoView();}}"
    "window.addEventListener('hashchange',openLinked);openLinked();"
)


def write_group(group: Group, out: Path) -> int:
    """Write the group's list page and query pages; returns the pages written."""
    (out / "queries").mkdir(parents=True, exist_ok=True)
    pages = list_pages(group)
    split = len(set(pages.values())) > 1
    for label, name in pages.items() if split else [(None, f"{group.slug}.html")]:
        text = list_page(group, only=label)
        (out / "queries" / name).write_text(text, encoding="utf-8")
    folder = out / "q" / group.slug
    folder.mkdir(parents=True, exist_ok=True)
    for qid in group.by_query:
        (out / group.page_of(qid)).write_text(query_page(group, qid), encoding="utf-8")
    return len(set(pages.values())) + len(group.by_query)


def story(qf: QueryFile, line: dict[str, Any], system: str) -> Iterable[str]:
    """One query's story as plain text lines (``chronobench show``): the request, the
    gold version, the version each selector and the system chose, then the system's
    scored questions."""
    stream = str(line["stream_id"])
    gold = line.get("gold")
    yield f"query   {line['query_id']}"
    yield f"request {line.get('request')}"
    yield f"intent  {line.get('intent')}, source {line.get('source')}, stream {stream}"
    yield f"gold    {_version(qf, stream, gold)}: {qf.version(stream, gold).get('summary', '')}"
    yield ""
    views = [(f"selector {n}", v) for n, v in (line.get("selectors") or {}).items()]
    if "probes" in line:
        views.append((f"system {system}", line))
    width = max(len(n) for n, _ in views)
    for name, v in views:
        chosen = v.get("chosen")
        scores = ", ".join(f"{k} {100 * float(x):.1f}" for k, x in (v.get("scores") or {}).items())
        if scores and v is line:
            # The query's RC-QA and its sides count only the known questions (those the
            # reference reader answers), not every question listed below.
            scores = f"on known questions only: {scores}"
        yield f"{name:<{width}}  chose {_version(qf, stream, chosen)}: {v.get('outcome')}; {scores}"
        if chosen != gold and chosen is not None:
            yield f"{'':<{width}}  {qf.version(stream, chosen).get('summary', '')}"
    for p in line.get("probes") or []:
        known = "" if "known" not in p else (", known" if p["known"] else ", not known")
        score = p.get("score")
        shown = "–" if score is None else f"{100 * float(score):.0f}"
        leak = f"  LEAK: {', '.join(p['leak'])}" if p.get("leak") else ""
        yield ""
        yield f"  [{p.get('label')}{known}] {qf.item(stream, str(p.get('item'))).get('question')}"
        yield f"    answer: {p.get('answer')}"
        yield f"    gold:   {qf.gold(stream, p)}"
        yield f"    score:  {shown} ({p.get('metric')}){leak}"


def story_data(qf: QueryFile, line: dict[str, Any], system: str) -> dict[str, Any]:
    """The story of :func:`story` as one JSON-ready object (``show --json``): the query
    line with every version and battery item it names spelled out (session, date,
    summary; question and gold)."""
    stream = str(line["stream_id"])

    def version(v: Any) -> dict[str, Any] | None:
        return None if v is None else {"version": v, **qf.version(stream, v)}

    out: dict[str, Any] = {
        "run_id": qf.header.get("run_id"),
        "system": system,
        "query_id": line["query_id"],
        "request": line.get("request"),
        "intent": line.get("intent"),
        "source": line.get("source"),
        "stream_id": stream,
        "gold": version(line.get("gold")),
        "selectors": {
            name: {**v, "chosen": version(v.get("chosen"))}
            for name, v in (line.get("selectors") or {}).items()
        },
    }
    if "probes" in line:
        out["chosen"] = version(line.get("chosen"))
        out["outcome"] = line.get("outcome")
        out["scores_on_known_questions"] = line.get("scores") or {}
        out["probes"] = [
            {
                **p,
                "question": qf.item(stream, str(p.get("item"))).get("question"),
                "gold": qf.gold(stream, p),
            }
            for p in line.get("probes") or []
        ]
    return out
