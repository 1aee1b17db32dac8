"""The NL request sets in issue 36's styles (offsets, ordinals, negation, knowledge state,
refusals), every writing (``locomo_nl_*``, ``locomo_v4_*`` to ``locomo_v10_*``):
every claim a script can verify is verified against LoCoMo itself, and the checker catches the
mistakes it is there to catch."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest

from data_builders.claims import (
    FAMILIES,
    FAMILY_STYLES,
    QDIR,
    check_forget_line,
    check_refuse_line,
    check_session_line,
    check_set,
    check_turn_line,
    load_conversations,
    longest_shared_run,
    read_set,
)


@pytest.fixture(scope="module")
def convs(locomo_path):
    return load_conversations(locomo_path)


@pytest.mark.parametrize(
    ("family", "role"), [(f, r) for f in sorted(FAMILIES) for r in sorted(FAMILIES[f])]
)
def test_every_claim_holds(family, role, convs):
    path = QDIR / FAMILIES[family][role]
    assert check_set(role, path, convs, FAMILY_STYLES[family]) == []


def test_an_unlisted_style_is_caught(convs):
    """The nl family has no paraphrase style: the v4 set read with its styles fails."""
    path = QDIR / FAMILIES["v4"]["session"]
    assert any("unknown styles" in p for p in check_set("session", path, convs))


@pytest.fixture(params=sorted(FAMILIES))
def sets(request):
    """One family's files by role; the tests below run once per family."""
    return FAMILIES[request.param]


def test_sizes_and_balance(sets):
    session = read_set(QDIR / sets["session"])
    styles = Counter(r["style"] for r in session)
    # The checker's own balance rule: every style at least 8 times.
    assert len(session) >= 80 and min(styles.values()) >= 8, styles
    assert len({r["sample_id"] for r in session}) == 10
    assert len(read_set(QDIR / sets["turn"])) >= 40
    assert len(read_set(QDIR / sets["forget"])) >= 30
    refuse = read_set(QDIR / sets["refuse"])
    assert len(refuse) >= 15 and all(r["expect"] == "refuse" for r in refuse)


def test_wrong_targets_are_caught(convs, sets):
    """Moving any target by one session, or flipping an intent, breaks its claim."""
    for rec in read_set(QDIR / sets["session"]):
        conv = convs[rec["sample_id"]]
        for delta in (-1, 1):
            bad = dict(rec, target_session=rec["target_session"] + delta)
            assert check_session_line(bad, conv, "x"), rec["query"]
        flipped = dict(rec, intent="undo" if rec["intent"] == "restore_to" else "restore_to")
        assert check_session_line(flipped, conv, "x"), rec["query"]
    for rec in read_set(QDIR / sets["turn"]):
        bad = dict(rec, target_session=rec["target_session"] + 1)
        assert check_turn_line(bad, convs[rec["sample_id"]], "x"), rec["query"]


def test_wrong_claims_are_caught(convs, sets):
    recs = {r["style"]: r for r in read_set(QDIR / sets["session"])}

    def probs(style, **claim):
        rec = copy.deepcopy(recs[style])
        rec["claim"].update(claim)
        return check_session_line(rec, convs[rec["sample_id"]], "x")

    assert probs("offset", offset={"days": 1})  # no session on that day, or not the gold
    assert any("unique" in p for p in probs("casual", unique="the|a"))  # not one session
    assert any("ordinal" in p for p in probs("ordinal", ordinal=1))
    assert any("count" in p for p in probs("ordinal", count=7))
    assert any("first" in p for p in probs("knowledge", topic="the"))
    month = recs["month"]["claim"]["month"]
    y, m = (int(x) for x in month.split("-"))
    other = f"{y + (m == 12)}-{m % 12 + 1:02d}"
    assert any("dated" in p for p in probs("month", month=other))
    ruled_out = probs("negation", **{"not": recs["negation"]["claim"]["event"]})
    assert any("ruled-out" in p for p in ruled_out)


def test_copying_a_turn_is_caught(convs, tmp_path, sets):
    recs = read_set(QDIR / sets["session"])
    conv = convs[recs[0]["sample_id"]]
    turn = conv.turns[recs[0]["claim"]["event"][0]][1]
    copied = dict(recs[0], query="forget this: " + turn)
    path = tmp_path / "copied.jsonl"
    path.write_text(json.dumps(copied) + "\n", encoding="utf-8")
    assert any("words in a row" in p for p in check_set("session", path, convs))
    assert not conv.copies_a_turn(recs[0]["query"])


def test_refusals_and_selective_lines(convs, sets):
    refuse = read_set(QDIR / sets["refuse"])[0]
    conv = convs[refuse["sample_id"]]
    assert check_refuse_line(dict(refuse, target_session=1), conv, "x")
    assert check_refuse_line(dict(refuse, claim={"absent": "caroline|melanie|mel"}), conv, "x")
    forget = read_set(QDIR / sets["forget"])[0]
    fconv = convs[forget["sample_id"]]
    assert check_forget_line(dict(forget, dialog_ids=["D1:1"]), fconv, "x")
    assert check_forget_line(dict(forget, anchor="observation o99.1"), fconv, "x")


def test_longest_shared_run():
    assert longest_shared_run("a b c d", ["x b c d y"]) == 3
    assert longest_shared_run("Mel's kids", ["mel\u2019s kids went"]) == 2
    assert longest_shared_run("nothing here", ["something else"]) == 0
