"""Query files' optional fields (style, expect, evidence, claim) and refusal scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _builders_fixtures import TINY_LOCOMO

from chronobench.data.io import load_built
from chronobench.metrics import score_refusal, score_selection
from data_builders import LOCOMO, build_dataset
from data_builders.user_query_file import (
    UserQueryError,
    evidence_cell,
    load_user_queries,
    notes_evidence,
    read_query_lines,
)


@pytest.fixture(scope="module")
def turn_ds(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    out = tmp_path_factory.mktemp("uqf")
    return load_built(build_dataset(LOCOMO, granularity="turn", source=TINY_LOCOMO, out_dir=out))


def _write(tmp_path: Path, *lines: object) -> Path:
    p = tmp_path / "styled.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return p


BASE = {"sample_id": "tiny-1", "query": "forget from the second bakery shift", "intent": "undo"}


def test_style_expect_and_claim_are_read(turn_ds, tmp_path: Path) -> None:  # noqa: ANN001
    p = _write(
        tmp_path,
        {**BASE, "target_session": 1, "style": "ordinal", "claim": {"ordinal": 2}},
        {"sample_id": "tiny-1", "query": "forget the climbing gym", "expect": "refuse"},
        {**BASE, "query": "undo that", "target_session": 2, "expect": "act"},
    )
    qs = load_user_queries(p, turn_ds)
    stream = turn_ds.streams[0]
    assert qs[0].meta["style"] == "ordinal" and "expect" not in qs[0].meta
    # A refusal leaves the memory as it is: its gold is the last version.
    assert qs[1].meta["expect"] == "refuse" and qs[1].target_version == stream.n_versions
    assert "style" not in qs[1].meta and "expect" not in qs[2].meta


def test_inline_evidence_is_the_turn_gold(turn_ds, tmp_path: Path) -> None:  # noqa: ANN001
    p = _write(
        tmp_path,
        {**BASE, "target_session": 1, "evidence": ["D2:2"]},
        {**BASE, "query": "keep up to the bakery shift", "intent": "restore_to",
         "target_session": 2, "evidence": ["D2:2", "D2:3"]},
        {**BASE, "query": "forget the chat about the bakery", "target_session": 1,
         "evidence": ["D2:2"]},
    )  # fmt: skip
    where = {d: w.version for w in turn_ds.streams[0].writes for d in w.labels["dialog_ids"]}
    session = [q.target_version for q in load_user_queries(p, turn_ds)]
    evidence = [q.target_version for q in load_user_queries(p, turn_ds, turn_gold="evidence")]
    assert evidence[0] == where["D2:2"] - 1  # undo: just before the first evidence turn
    assert evidence[1] == where["D2:3"]  # restore_to: through the last
    assert evidence[2] == session[2]  # names a whole chat: the session boundary stays
    assert session[0] != evidence[0]


def test_claims_give_the_turn_gold_when_nothing_else_does(turn_ds, tmp_path: Path) -> None:  # noqa: ANN001
    """No evidence field, no notes file: the claim's event turns are the gold, except where
    the claim says the request names a chat at an offset from the event, or by its month."""
    p = _write(
        tmp_path,
        {**BASE, "target_session": 1, "claim": {"event": ["D2:2"], "ordinal": 2}},
        {**BASE, "query": "forget from the day after the bakery shift", "target_session": 1,
         "claim": {"event": ["D2:2"], "offset": {"days": 1}}},
        {**BASE, "query": "forget the May bakery shift", "target_session": 1,
         "claim": {"event": ["D2:2"], "month": "May"}},
    )  # fmt: skip
    where = {d: w.version for w in turn_ds.streams[0].writes for d in w.labels["dialog_ids"]}
    session = [q.target_version for q in load_user_queries(p, turn_ds)]
    evidence = [q.target_version for q in load_user_queries(p, turn_ds, turn_gold="evidence")]
    assert evidence == [where["D2:2"] - 1, session[1], session[2]]


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"style": ""}, r"line 1: field 'style': expected a non-empty string"),
        ({"style": 3}, r"field 'style'"),
        ({"expect": "maybe"}, r"field 'expect': 'maybe'; use one of \('act', 'refuse'\)"),
        ({"evidence": "D1:1"}, r"field 'evidence': expected a list of dialog ids"),
        ({"evidence": [""]}, r"field 'evidence'"),
        ({"claim": [1]}, r"field 'claim': expected a JSON object"),
        ({"expect": "refuse"}, r"field 'target_session': a request with \"expect\": \"refuse\" "
         r"has no target.*drop the field"),
    ],
)  # fmt: skip
def test_bad_optional_fields_name_file_line_field_and_fix(
    tmp_path: Path, extra: dict, match: str
) -> None:
    p = _write(tmp_path, {**BASE, "target_session": 1, **extra})
    with pytest.raises(UserQueryError, match=match) as err:
        read_query_lines(p)
    assert str(err.value).startswith(str(p))


def test_a_refusal_needs_no_target_but_an_action_does(tmp_path: Path) -> None:
    ok = _write(tmp_path, {"sample_id": "tiny-1", "query": "thanks, forget it", "expect": "refuse"})
    assert len(read_query_lines(ok)) == 1
    bad = _write(tmp_path, {"sample_id": "tiny-1", "query": "forget the bakery"})
    with pytest.raises(UserQueryError, match="give exactly one of target_session"):
        read_query_lines(bad)


def test_refusal_scoring() -> None:
    ones = {"recall_at_1": 1.0, "recall_at_k": 1.0, "scope_at_k": 1.0, "mrr": 1.0}
    zeros = dict.fromkeys(ones, 0.0)
    assert score_refusal([]) == ones  # refused, as expected
    assert score_refusal([(3, 0.9)]) == zeros  # acted on a request to refuse
    assert score_refusal([4, 5]) == zeros
    assert score_selection([], 3) == zeros  # refused a request it should act on
    with pytest.raises(TypeError):
        score_refusal([("3", 0.1)])


class _Selector:
    """Ranks the last version for a request mentioning the bakery, nothing otherwise."""

    def search(self, writes, queries, top_k):  # noqa: ANN001, ANN201
        last = len(writes)  # write ids run 1..n
        return {rid: [(last, 1.0)] if "bakery" in t else [] for rid, t in queries.items()}


def test_selection_scores_a_refusal_only_when_expected(turn_ds, tmp_path: Path) -> None:  # noqa: ANN001
    from types import SimpleNamespace

    from chronobench.runner.selection import run_selection

    p = _write(
        tmp_path,
        {"sample_id": "tiny-1", "query": "forget the climbing gym", "expect": "refuse"},
        {"sample_id": "tiny-1", "query": "forget the bakery, I never said it", "expect": "refuse"},
        {**BASE, "query": "thanks, undo it", "target_session": 1},
    )
    queries = load_user_queries(p, turn_ds)
    data = SimpleNamespace(
        streams=turn_ds.streams,
        queries=queries,
        queries_by_stream=lambda: {turn_ds.streams[0].stream_id: queries},
    )
    cell = SimpleNamespace(
        spec=SimpleNamespace(selectors=["fake"]), build_selector=lambda name, stores: _Selector()
    )
    rows: list = []
    log = SimpleNamespace(append=lambda new: rows.extend(new) or len(new))
    run_selection(data, cell, None, log, set(), k=5, progress=False)
    r1 = {r.request: r.scores["recall_at_1"] for r in rows}
    assert r1 == {
        "forget the climbing gym": 1.0,  # refused, as it must be
        "forget the bakery, I never said it": 0.0,  # acted on a request to refuse
        "thanks, undo it": 0.0,  # refused a request it should act on
    }


def test_notes_evidence_cells_in_every_form() -> None:
    # the evidence first; later mentions after ';' and remarks in parentheses are not
    assert evidence_cell("S12 D12:12; again S18") == ["D12:12"]
    assert evidence_cell("S1 D1:25-27; again S5 D5:2") == ["D1:25", "D1:26", "D1:27"]
    assert evidence_cell("S5 D5:4 (no earlier pottery)") == ["D5:4"]
    assert evidence_cell("S5 D5:1; recalled S8 D8:17, S9 D9:8") == ["D5:1"]
    assert evidence_cell("D5:4 D5:6") == ["D5:4", "D5:6"]  # the v3 notes' form
    assert evidence_cell("D5:4, D5:6") == ["D5:4", "D5:6"]
    assert evidence_cell("S12; again S18") is None  # a session only: its boundary stays
    with pytest.raises(UserQueryError, match="'again' is neither a turn id"):
        evidence_cell("S12 D12:12 again S18", "x.notes.md", "11")
    with pytest.raises(UserQueryError, match="ends before it starts"):
        evidence_cell("D1:27-25")


def test_every_notes_file_parses() -> None:
    qdir = Path(__file__).resolve().parents[1] / "data_builders" / "user_queries"
    notes = sorted(qdir.glob("*.notes.md"))
    assert notes
    for path in notes:
        queries = path.with_name(path.name.removesuffix(".notes.md") + ".jsonl")
        rows = notes_evidence(queries)  # raises on a cell it cannot read
        n = sum(1 for x in queries.read_text(encoding="utf-8").splitlines() if x.strip())
        assert rows == [] or len(rows) == n, f"{path.name}: {len(rows)} rows, {n} requests"
