"""The compact per-query file of a run (``queries.jsonl.gz``): one query's story for
the viewer and ``chronobench show``, small enough to publish.

``samples.jsonl`` holds every sample with the memory shown and the probe's whole record
(12,322 lines per main-job generation cell); published runs keep only manifest, metrics
and config. This file keeps, per rollback query: the request, intent and
source, the version the system and each RQ1 selector chose against the gold v* (each
with its session number, date and a summary, from the file's stream table), the
query's RC-QA parts, and each *scored* probe (not the whole battery) with the answer,
the score the headline reads (its question and gold are the stream table's battery
items), its protocol-3 label (:func:`data_builders.battery.label_probes`,
docs/protocol.md): ``keep``, ``forget``, ``answerable``, ``adversarial``, ``conflict``,
``future``, ``summary``, and its leakage flags. The final-session questions (asked once per stream at its last version,
with no rollback) are no part of a query's story and are left out.

Lines (JSON, sorted keys), in order: one ``{"type": "run", ...}`` header, one
``{"type": "stream", ...}`` per stream (its versions' sessions, dates and summaries;
its battery items' questions and gold), then one ``{"type": "query", ...}`` line per
query in sample order: the system's choice and ``probes``, and in a run with RQ1 every
selector's choice under ``selectors``. The file is gzip with a
zero timestamp and no name (the same rows give the same bytes), derived only from
``samples.jsonl``, the dataset and ``known.json``: rerunning a cell rewrites it
identically.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from chronobench.fileio import atomic_write_bytes

QUERIES_FILE = "queries.jsonl.gz"
SCHEMA = "chronobench.queries/1"

#: Characters of an answer kept (a summary keeps its scored words instead).
MAX_ANSWER_CHARS = 300
#: Characters of a version's summary kept.
MAX_SUMMARY_CHARS = 320

#: Per label, the score the file shows (the headline's for keep and forget), by format.
_METRIC = {
    "keep": {"qa": "qa_f1", "recall": "recall_acc"},
    "forget": {"qa": "future_abstain", "recall": "recall_forget"},
    "answerable": {"qa": "qa_f1", "recall": "recall_acc"},
    "adversarial": {"qa": "adversarial_acc"},
    "conflict": {"qa": "qa_f1"},
    "future": {"qa": "future_abstain", "recall": "recall_forget"},
    "summary": {"qa": "last_session_coverage"},
    "final": {"qa": "final_correct", "recall": "final_correct"},
}
_LEAK_FIELDS = ("future_leak", "recall_leak", "summary_leakage")


def probe_label(row: Mapping[str, Any]) -> str:
    """A scored probe row's protocol-3 label (see the module)."""
    kind = row.get("probe_kind")
    probe = row.get("probe") or {}
    meta = probe.get("meta") or {}
    if kind == "summary":
        return "summary"
    if kind == "final_qa":
        return "final"
    if kind == "future_qa":
        return "forget" if meta.get("boundary") == "after" else "future"
    if meta.get("boundary") == "before":
        return "keep"
    if meta.get("counterfactual"):
        return "conflict"
    if row.get("category") == 5 or probe.get("category") == 5:
        return "adversarial"
    return "answerable"


def outcome(chosen: int | None, gold: int | None) -> str:
    """``exact``, ``early`` (an older version than v*), ``late`` or ``none`` (no rollback)."""
    if chosen is None or gold is None:
        return "none"
    return "exact" if chosen == gold else ("early" if chosen < gold else "late")


def _round(x: Any) -> Any:
    return round(float(x), 4) if isinstance(x, (int, float)) and not isinstance(x, bool) else x


def _cut(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _words(text: str, n: int) -> str:
    words = str(text).split()
    return " ".join(words[:n]) + (" …" if len(words) > n else "")


def _item_id(probe: Mapping[str, Any]) -> str:
    meta = probe.get("meta") or {}
    return str(meta.get("battery_id") or meta.get("qa_id") or probe.get("probe_id", ""))


def _item(probe: Mapping[str, Any]) -> dict[str, Any]:
    """A battery item's stream-table entry: its question and gold, whichever side of v*
    a query puts it (the label says which: see :func:`gold_text`)."""
    answers = list(probe.get("answers") or [])
    later = list(probe.get("future_answers") or [])
    out: dict[str, Any] = {"question": str(probe.get("question", ""))}
    if answers and later:  # a conflict: the old value before the override, the new after
        out.update(answers=answers, later=later)
    else:
        out["answers"] = answers or later
    return out


def _probe_entry(row: Mapping[str, Any], known: set[str]) -> dict[str, Any]:
    probe = row.get("probe") or {}
    meta = probe.get("meta") or {}
    label = probe_label(row)
    fmt = str(meta.get("format") or "qa")
    scores = row.get("scores") or {}
    metric = _METRIC[label].get(fmt) or _METRIC[label].get("qa")
    answer = str(row.get("prediction") or "")
    entry: dict[str, Any] = {
        "item": _item_id(probe),
        "label": label,
        "metric": metric,
        "score": _round(scores.get(metric)) if metric else None,
    }
    if label == "summary":
        budget = int(meta.get("word_budget") or 150)
        entry["answer"] = _cut(_words(answer, budget), 8 * budget)
        entry["sessions"] = list(meta.get("sessions") or [])
    else:
        entry["answer"] = _cut(answer, MAX_ANSWER_CHARS)
    if label in ("keep", "forget"):
        entry["known"] = str(meta.get("qa_id") or probe.get("question") or "") in known
    leaks = [f for f in _LEAK_FIELDS if float(scores.get(f) or 0.0) > 0.0]
    if leaks:
        entry["leak"] = leaks
    return entry


def gold_text(label: str, item: Mapping[str, Any], sessions: Iterable[Any] = ()) -> str:
    """What a probe of ``label`` expects now, and what holds after v* where that counts."""
    if label == "summary":
        return "the events of sessions " + ", ".join(str(s) for s in sessions)
    answers = " | ".join(str(a) for a in item.get("answers") or [])
    if label in ("forget", "future"):
        return "(abstain: not in memory)" + (f" · later: {answers}" if answers else "")
    text = answers or "(abstain: not in memory)"
    if item.get("later"):
        text += " · later: " + " | ".join(str(a) for a in item["later"])
    return text


def _query_head(r: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "query",
        "query_id": str(r["query_id"]),
        "stream_id": str(r["stream_id"]),
        "request": str(r.get("request", "")),
        "intent": r.get("intent"),
        "source": r.get("source"),
        "gold": r.get("gold_version"),
    }


def query_lines(
    rows: Iterable[Mapping[str, Any]],
    *,
    known: Mapping[str, Iterable[str]] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, dict[str, Any]]]]:
    """The ``query`` lines of a run's sample rows (one per query, in the order queries
    first appear; selection rows under ``selectors``, probe rows as the system's
    ``probes``; other rows are left out) and the battery items they name (stream id ->
    item id -> question and gold)."""
    from chronobench.metrics.runlevel import run_units

    rows = [r for r in rows if r.get("status", "ok") == "ok"]
    probes = [r for r in rows if r.get("kind") == "probe"]
    rc = {
        u["query_id"]: u["scores"]
        for u in (run_units(probes, known) if probes else [])
        if "rc_qa" in u["scores"]
    }
    known_sets = {s: {str(i) for i in ids} for s, ids in (known or {}).items()}
    items: dict[str, dict[str, dict[str, Any]]] = {}
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        kind = r.get("kind")
        if kind not in ("selection", "probe"):
            continue
        qid = str(r["query_id"])
        line = out.get(qid)
        if line is None:
            line = out[qid] = _query_head(r)
        if kind == "selection":
            ranked = [list(x) for x in r.get("ranked") or []]
            chosen = ranked[0][0] if ranked else None
            line.setdefault("selectors", {})[str(r["selector"])] = {
                "chosen": chosen,
                "candidates": ranked[:3],
                "outcome": outcome(chosen, line["gold"]),
                "scores": {k: _round(v) for k, v in (r.get("scores") or {}).items()},
            }
            continue
        if r.get("probe_kind") == "final_qa":
            # Asked once per stream at its last version, after no rollback: no part of
            # this query's story (its row only names the query that carried it).
            continue
        if "chosen" not in line:
            line["chosen"] = r.get("selected_version")
            line["candidates"] = [list(x) for x in (r.get("candidates") or [])[:3]]
        probe = r.get("probe") or {}
        stream = str(r["stream_id"])
        items.setdefault(stream, {}).setdefault(_item_id(probe), _item(probe))
        line.setdefault("probes", []).append(_probe_entry(r, known_sets.get(stream, set())))
    lines = list(out.values())
    order = {label: i for i, label in enumerate(_METRIC)}
    for line in lines:
        if "probes" not in line:
            continue
        line["probes"].sort(key=lambda p: (order[p["label"]], p["item"]))
        line.setdefault("chosen", None)
        line.setdefault("candidates", [])
        line["outcome"] = outcome(line["chosen"], line["gold"])
        parts = rc.get(line["query_id"])
        if parts is not None:
            line["scores"] = {
                "rc_qa": _round(parts["rc_qa"]),
                "keep": _round(parts["rc_qa_a"]),
                "forget": _round(parts["rc_qa_b"]),
            }
        line["leaks"] = sum(1 for p in line["probes"] if p.get("leak"))
    return lines, items


def _versions_named(line: Mapping[str, Any]) -> Iterator[Any]:
    yield line.get("gold")
    yield line.get("chosen")
    yield from (c[0] for c in line.get("candidates") or [])
    for sel in (line.get("selectors") or {}).values():
        yield sel.get("chosen")
        yield from (c[0] for c in sel.get("candidates") or [])


def stream_lines(
    versions: Mapping[str, Mapping[int, Mapping[str, Any]]],
    lines: Iterable[Mapping[str, Any]],
    items: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> list[dict[str, Any]]:
    """The ``stream`` lines: per stream, the versions the query lines name (gold, chosen,
    candidates), each ``{"session", "date", "summary"}`` from ``versions`` (stream id
    -> version -> its description), and the battery items its probes name."""
    wanted: dict[str, set[int]] = {}
    for line in lines:
        vs = wanted.setdefault(str(line["stream_id"]), set())
        vs.update(v for v in _versions_named(line) if isinstance(v, int))
    out = []
    for sid in sorted(wanted):
        table = versions.get(sid, {})
        out.append(
            {
                "type": "stream",
                "stream_id": sid,
                "versions": {
                    str(v): {
                        k: (_cut(x, MAX_SUMMARY_CHARS) if k == "summary" else x)
                        for k, x in table[v].items()
                    }
                    for v in sorted(wanted[sid])
                    if v in table
                },
                "items": dict(sorted((items.get(sid) or {}).items())),
            }
        )
    return out


def encode(lines: Iterable[Mapping[str, Any]]) -> bytes:
    """The file's bytes: one sorted-key JSON line each, gzip with no timestamp or name."""
    text = "".join(json.dumps(x, sort_keys=True, ensure_ascii=False) + "\n" for x in lines)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(text.encode("utf-8"))
    return buf.getvalue()


def write_query_file(
    run_dir: Path,
    run_id: str,
    cell: Mapping[str, Any],
    rows: Iterable[Mapping[str, Any]],
    versions: Mapping[str, Mapping[int, Mapping[str, Any]]],
    known: Mapping[str, Iterable[str]] | None = None,
) -> Path | None:
    """Write ``run_dir/queries.jsonl.gz`` (None, and no file, when the run has no
    selection or probe rows: a repair cell)."""
    queries, items = query_lines(rows, known=known)
    path = Path(run_dir) / QUERIES_FILE
    if not queries:
        path.unlink(missing_ok=True)
        return None
    header = {"type": "run", "schema": SCHEMA, "run_id": run_id, "cell": dict(cell)}
    streams = stream_lines(versions, queries, items)
    return atomic_write_bytes(path, encode([header, *streams, *queries]))


def rewrite_query_file(
    run_dir: Path, rows: Iterable[Mapping[str, Any]], known: Mapping[str, Iterable[str]] | None
) -> Path | None:
    """Rewrite a run's per-query file from re-scored ``rows`` (``chronobench score``),
    keeping its header and version table (rescoring changes no version); None when the
    run has none."""
    path = Path(run_dir) / QUERIES_FILE
    if not path.is_file():
        return None
    old = QueryFile(path)
    cell = old.header.get("cell") or {}
    return write_query_file(run_dir, str(old.header.get("run_id")), cell, rows, old.streams, known)


def iter_lines(path: Path) -> Iterator[dict[str, Any]]:
    """Every line of a per-query file, as written."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for n, text in enumerate(fh, start=1):
            if text.strip():
                try:
                    yield json.loads(text)
                except ValueError as exc:
                    raise ValueError(f"{path}: line {n} is not JSON ({exc})") from None


class QueryFile:
    """A per-query file read back: ``header``, ``streams`` (id -> version -> its
    description) and ``queries`` (the query lines)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.header: dict[str, Any] = {}
        self.streams: dict[str, dict[int, dict[str, Any]]] = {}
        self.items: dict[str, dict[str, dict[str, Any]]] = {}
        self.queries: list[dict[str, Any]] = []
        for line in iter_lines(self.path):
            kind = line.get("type")
            if kind == "run":
                if line.get("schema") != SCHEMA:
                    raise ValueError(
                        f"{self.path}: schema {line.get('schema')!r}, this version reads "
                        f"{SCHEMA}; rerun the cell to rewrite it"
                    )
                self.header = line
            elif kind == "stream":
                self.streams[line["stream_id"]] = {
                    int(v): d for v, d in (line.get("versions") or {}).items()
                }
                self.items[line["stream_id"]] = dict(line.get("items") or {})
            elif kind == "query":
                self.queries.append(line)

    def version(self, stream_id: str, v: int | None) -> dict[str, Any]:
        """A version's description (``{}`` when none was written)."""
        if v is None:
            return {}
        return self.streams.get(stream_id, {}).get(int(v), {})

    def item(self, stream_id: str, item_id: str) -> dict[str, Any]:
        """A battery item's question and gold (``{}`` when none was written)."""
        return self.items.get(stream_id, {}).get(item_id, {})

    def gold(self, stream_id: str, probe: Mapping[str, Any]) -> str:
        """A probe entry's gold as text (:func:`gold_text`)."""
        item = self.item(stream_id, str(probe.get("item")))
        return gold_text(str(probe.get("label")), item, probe.get("sessions") or ())

    def find(self, query_id: str) -> list[dict[str, Any]]:
        """The line of ``query_id``, or of every query whose id ends with it
        (``restore_to/ev-s1-1``)."""
        exact = [q for q in self.queries if q["query_id"] == query_id]
        if exact:
            return exact
        return [q for q in self.queries if q["query_id"].endswith("/" + query_id.strip("/"))]
