"""The hand-written RQ1 request sets v3: every gold target checked against LoCoMo itself.

For each request of ``locomo_v3_{tuning,heldout}.jsonl`` the notes file gives the session
it names, the dialogue turns that state the event and, for a request that names a time,
how that time resolves against the session dates. This test rebuilds the LoCoMo streams
at session and turn granularity with the builder's own stream function and checks that

- every line loads with the user-query loader and maps to the version right after its
  target session (the last write of that session at turn granularity);
- the notes agree with the JSONL line by line, and the target follows from the intent
  (restore_to: the event session; undo: the session before it);
- the evidence turns exist and sit in the event session, before v* for restore_to and
  after it for undo, at both granularities;
- a time-naming request's target is exactly what its time rule gives on the session
  dates, and its reference "now" is the last session's date;
- the sets are large enough: >= 300 requests over all 10 conversations, >= 60 naming a
  time, each set covering every conversation and both intents; no request repeats.

Nothing here runs a selector: the gold comes from LoCoMo's annotations, not from a model.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from chronobench.data.io import BuiltDataset
from chronobench.data.schema import Stream
from data_builders.user_query_file import NAMES_CONVERSATION, load_user_queries

QDIR = Path(__file__).resolve().parents[1] / "data_builders" / "user_queries"
SETS = ("tuning", "heldout")
GRANS = ("session", "turn")
COLUMNS = ["line", "sample", "intent", "event", "target", "time", "now", "evidence", "style", "why"]
_DATE = re.compile(r"(\d{1,2}) (\w+), (\d{4})$")


def _session_date(text: str) -> dt.date:
    """'1:56 pm on 8 May, 2023' -> date(2023, 5, 8)."""
    m = _DATE.search(text.strip())
    assert m, f"unparseable LoCoMo session date {text!r}"
    return dt.datetime.strptime(" ".join(m.groups()), "%d %B %Y").date()


def _lines(name: str) -> list[dict]:
    path = QDIR / f"locomo_v3_{name}.jsonl"
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _notes(name: str) -> list[dict[str, str]]:
    rows = []
    for raw in (QDIR / f"locomo_v3_{name}.notes.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in raw.strip().strip("|").split("|")]
        if raw.startswith("| ") and cells[0].isdigit():
            assert len(cells) == len(COLUMNS), f"notes row {raw!r}: expected {len(COLUMNS)} cells"
            rows.append(dict(zip(COLUMNS, cells, strict=True)))
    return rows


@pytest.fixture(scope="module")
def built(locomo_path: Path) -> dict[str, BuiltDataset]:
    # The builder's own stream function; probes are not needed to check targets.
    from data_builders.locomo.source import load_locomo
    from data_builders.locomo.streams import build_stream

    records = load_locomo(locomo_path)
    return {
        g: BuiltDataset(
            streams=[build_stream(r, g).stream for r in records], queries=[], manifest={}
        )
        for g in GRANS
    }


def _sessions(stream: Stream) -> dict[int, tuple[list[int], dt.date, set[str]]]:
    """session -> (its write versions, its date, its dialogue ids)."""
    out: dict[int, tuple[list[int], dt.date, set[str]]] = {}
    for w in stream.writes:
        n = int(w.labels["session"])
        vs, _, ids = out.setdefault(n, ([], _session_date(w.labels["session_date"]), set()))
        vs.append(w.version)
        ids.update(w.labels["dialog_ids"])
    return out


def test_notes_match_the_request_files() -> None:
    for name in SETS:
        lines, notes = _lines(name), _notes(name)
        assert len(lines) == len(notes), f"{name}: {len(lines)} requests, {len(notes)} notes"
        for i, (rec, note) in enumerate(zip(lines, notes, strict=True), start=1):
            assert int(note["line"]) == i
            assert (note["sample"], note["intent"]) == (rec["sample_id"], rec["intent"])
            event = int(note["event"].removeprefix("S"))
            want = event if rec["intent"] == "restore_to" else event - 1
            assert int(note["target"]) == rec["target_session"] == want, f"{name} line {i}"


def test_set_sizes_and_coverage() -> None:
    every = [
        (name, rec, note)
        for name in SETS
        for rec, note in zip(_lines(name), _notes(name), strict=True)
    ]
    assert len(every) >= 300
    assert sum(note["time"] != "-" for _, _, note in every) >= 60
    assert sum(note["time"] != "-" for name, _, note in every if name == "heldout") >= 60
    convs = {f"conv-{n}" for n in (26, 30, 41, 42, 43, 44, 47, 48, 49, 50)}
    for name in SETS:
        recs = _lines(name)
        assert {r["sample_id"] for r in recs} == convs, name
        assert set(Counter(r["intent"] for r in recs)) == {"undo", "restore_to"}, name
    texts = [(r["sample_id"], r["query"].strip()) for _, r, _ in every]
    assert len(texts) == len(set(texts)), "a request occurs twice (within or across the sets)"
    older = {
        (r["sample_id"], r["query"].strip())
        for f in QDIR.glob("*.jsonl")
        # Rollback sets only: the RQ4 forget sets have their own schema ("request", no intent).
        if not f.name.startswith(
            (
                "locomo_v3_",
                "locomo_forget_",
                "locomo_nl_forget_",
                "locomo_v4_forget_",
                "locomo_v5_forget_",
                "locomo_v6_forget_",
                "locomo_v7_forget_",
                "locomo_v8_forget_",
                "locomo_v9_forget_",
                "locomo_v10_forget_",
            )
        )
        for r in map(json.loads, f.read_text(encoding="utf-8").splitlines())
    }
    assert not older & set(texts), "a v3 request repeats one of the older sets"


@pytest.mark.parametrize("gran", GRANS)
@pytest.mark.parametrize("name", SETS)
def test_gold_points_at_the_named_session(
    built: dict[str, BuiltDataset], name: str, gran: str
) -> None:
    data = built[gran]
    streams = {s.sample_id: s for s in data.streams}
    queries = load_user_queries(QDIR / f"locomo_v3_{name}.jsonl", data)
    notes = _notes(name)
    assert len(queries) == len(notes) and all(q.source == "user" for q in queries)
    for q, rec, note in zip(queries, _lines(name), notes, strict=True):
        where = f"{name} line {note['line']} ({gran})"
        stream = streams[rec["sample_id"]]
        sess = _sessions(stream)
        order = sorted(sess)
        target, event = rec["target_session"], int(note["event"].removeprefix("S"))
        # Every request changes something: never the empty memory, never the full stream.
        assert 0 < target < order[-1], where
        assert q.target_version == max(sess[target][0]), where
        assert stream.writes[q.target_version].labels["session"] == order[order.index(target) + 1]
        if note["evidence"] != "date":
            ids = note["evidence"].split()
            assert set(ids) <= sess[event][2], f"{where}: evidence {ids} not in S{event}"
            at = {i: w.version for w in stream.writes for i in w.labels["dialog_ids"]}
            if rec["intent"] == "restore_to":
                assert all(at[i] <= q.target_version for i in ids), where
            else:
                assert all(at[i] > q.target_version for i in ids), where
        _check_time(note, sess, event, target, where)


def _check_time(note: dict[str, str], sess: dict, event: int, target: int, where: str) -> None:
    dates = {n: d for n, (_, d, _) in sess.items()}
    last = max(sess)
    if note["time"] == "-":
        assert note["now"] == "-", where
        return
    assert note["now"] == f"{dates[last].isoformat()} (S{last})", f"{where}: now"
    kind, value = note["time"].split()
    if kind in ("before", "through"):
        day = dt.date.fromisoformat(value)
        kept = [
            n for n in sorted(dates) if dates[n] < day or (kind == "through" and dates[n] == day)
        ]
        assert target == (kept[-1] if kept else 0), f"{where}: {note['time']}"
        assert day <= dates[last], where
    elif kind == "on":
        day = dt.date.fromisoformat(value)
        assert [n for n in dates if dates[n] == day] == [event], where
    elif kind == "in":
        assert dates[event].strftime("%Y-%m") == value, where
    else:
        pytest.fail(f"{where}: unknown time rule {note['time']!r}")


@pytest.mark.parametrize("name", SETS)
def test_evidence_turn_gold(built: dict[str, BuiltDataset], name: str) -> None:
    """dataset.turn_gold=evidence: event-naming requests cut at their evidence turns
    (restore_to keeps through the last, undo lands before the first); requests that name
    a conversation or only a date keep the session boundary; session granularity and
    the default are unchanged."""
    path = QDIR / f"locomo_v3_{name}.jsonl"
    old = load_user_queries(path, built["turn"])
    new = load_user_queries(path, built["turn"], turn_gold="evidence")
    streams = {s.sample_id: s for s in built["turn"].streams}
    moved = 0
    for q_old, q_new, rec, note in zip(old, new, _lines(name), _notes(name), strict=True):
        if note["evidence"] == "date" or NAMES_CONVERSATION.search(rec["query"]):
            assert q_new.target_version == q_old.target_version
            continue
        at = {
            i: w.version for w in streams[rec["sample_id"]].writes for i in w.labels["dialog_ids"]
        }
        vs = [at[i] for i in note["evidence"].split()]
        want = max(vs) if rec["intent"] == "restore_to" else min(vs) - 1
        assert q_new.target_version == want
        moved += q_new.target_version != q_old.target_version
    assert moved > 0
    sess = load_user_queries(path, built["session"], turn_gold="evidence")
    assert [q.target_version for q in sess] == [
        q.target_version for q in load_user_queries(path, built["session"])
    ]


def test_first_mention_dev_set_loads_under_the_evidence_gold(
    built: dict[str, BuiltDataset],
) -> None:
    """locomo_nl_first_dev's notes give, per line, the session and turns of the first
    mention (later mentions follow a ';'): every line loads under the evidence gold, its
    evidence turns sit in the session its cell names first, and its v* lands at them."""
    from data_builders.user_query_file import evidence_cell

    path = QDIR / "locomo_nl_first_dev.jsonl"
    recs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    cells = [
        [c.strip() for c in raw.strip().strip("|").split("|")][4]
        for raw in path.with_name("locomo_nl_first_dev.notes.md").read_text().splitlines()
        if re.match(r"\| \d+ \|", raw)
    ]
    assert len(cells) == len(recs) == 21
    queries = load_user_queries(path, built["turn"], turn_gold="evidence")
    streams = {s.sample_id: s for s in built["turn"].streams}
    for q, rec, cell in zip(queries, recs, cells, strict=True):
        turns = evidence_cell(cell)
        assert turns, cell
        session = re.match(r"S(\d+) ", cell)
        assert session and all(t.startswith(f"D{session[1]}:") for t in turns), cell
        if NAMES_CONVERSATION.search(rec["query"]):
            continue
        at = {
            i: w.version for w in streams[rec["sample_id"]].writes for i in w.labels["dialog_ids"]
        }
        vs = [at[t] for t in turns]
        assert q.target_version == (max(vs) if rec["intent"] == "restore_to" else min(vs) - 1)
