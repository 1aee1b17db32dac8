"""Intent rules, the undo shift, and FTS query sanitising."""

from __future__ import annotations

import sqlite3

import pytest

from chronomem import apply_intent, content_query, detect_intent, fts_expression, rrf
from tests._memory_fixtures import APP, USER, facts_store


@pytest.mark.parametrize(
    "text",
    [
        "undo the update about my job",
        "Revert the change where I said I moved",
        "roll back the move to Lisbon",
        "forget everything since I adopted the puppy",
        "please remove what I told you about my password",
        "delete the part about the bank",
        "the Lisbon move and everything after it should go",
        "take me to before I moved",
        # "cancel" is an erasure verb, and what starts at X goes with X
        "Cancel everything starting from the Lisbon move.",
        "cancel the chat where I said I moved",
        # a phrasal verb's "up" before an infinitive is not "up to X"
        "take things back to just before the gear I picked up to improve my game",
    ],
)
def test_undo_phrases(text: str) -> None:
    assert detect_intent(text) == "undo"


@pytest.mark.parametrize(
    "text",
    [
        "go back to when I lived in Oslo",
        "go back to where Ann had just moved to Oslo; anything after that can go",
        # what follows the move goes, the move stays (every request of this shape in the
        # hand-written sets is a restore)
        "everything after the Lisbon move should go",
        "restore to when I started at the hospital",
        "memory as of the job change",
        "the state after I moved to Lisbon",
        # "revert to the chat where X" lands on that chat, as "go back to" it does
        "revert to the chat where I moved to Lisbon",
        "keep everything up to the chat where I moved",
        "right after the puppy arrived",
        "Lisbon move",  # no cue: default
    ],
)
def test_restore_phrases(text: str) -> None:
    assert detect_intent(text) == "restore_to"


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        # Keep-then-drop phrasing names what stays: restore to just after it.
        ("keep what you had once Ann moved to Lisbon, drop the rest", "restore_to"),
        ("keep only the memories until the puppy arrived and bin the rest", "restore_to"),
        ("the Oslo trip - pretend nothing after it was said", "restore_to"),
        # "never took place", "act as if ... never", "unlearn", "... should go": cancel it.
        ("act as if the Lisbon move never came up", "undo"),
        ("the chat about my new job and the ones after never took place", "undo"),
        ("please unlearn the bank password thing", "undo"),
        # "un-" before a verb of knowing or perceiving is an erasure verb too.
        ("the Lisbon move - un-remember it and everything after", "undo"),
        ("please unremember the bank password thing", "undo"),
        ("could you unknow the puppy conversation", "undo"),
        # "up until" and "up till" say what "up to" says: X is kept.
        ("remember up until Ann moved to Lisbon, drop what came after", "restore_to"),
        ("keep things up till the puppy arrived", "restore_to"),
        ("the puppy conversation and what followed should go", "undo"),
        ("the hospital job, and anything you heard afterwards", "undo"),
        # An erasure verb inside a hyphenated name is content, not a cue.
        ("keep the very first chat, where Nate won at Counter-Strike", "restore_to"),
        ("go back to when we talked about the clear-cut forest", "restore_to"),
        ("strike the chat about Counter-Strike", "undo"),
    ],
)
def test_paraphrased_intent_cues(text: str, intent: str) -> None:
    assert detect_intent(text) == intent


def test_content_query_drops_paraphrased_request_wording() -> None:
    assert content_query("scrap the pottery stuff Ann told you about and what followed") == (
        "pottery Ann"
    )
    assert content_query("keep what you had once Ann moved to Lisbon, drop the rest") == (
        "Ann moved Lisbon"
    )
    assert content_query("act like the - Oslo trip never took place") == "Oslo trip"


def test_content_query_strips_request_words() -> None:
    assert content_query("Please undo the move to Lisbon") == "move Lisbon"
    assert content_query("go back to when I lived in Oslo") == "lived Oslo"
    assert (
        content_query("Forget everything from our chat in which Gina got her tattoo onwards.")
        == "Gina got her tattoo"
    )
    assert content_query("undo") == "undo"  # nothing left: the request itself


def test_apply_intent_shift() -> None:
    parents = {0: None, 1: 0, 2: 1, 3: 2}
    assert apply_intent([(3, 0.9), (1, 0.5)], "undo", parents) == [(2, 0.9), (0, 0.5)]
    assert apply_intent([(3, 0.9)], "restore_to", parents) == [(3, 0.9)]
    assert rrf([[(1, 9.0), (2, 1.0)], [(2, 0.5)]], k0=60)[0][0] == 2


def test_resolve_uses_intent_and_can_be_forced() -> None:
    mem, _ = facts_store()
    assert mem.resolve(APP, USER, "undo the Lisbon Portugal move")[0][0] == 3
    assert mem.resolve(APP, USER, "go back to when I moved to Lisbon Portugal")[0][0] == 4
    assert mem.resolve(APP, USER, "Lisbon Portugal", intent="undo")[0][0] == 3
    res = mem.rollback_to_version_by_nl_query(APP, USER, "forget the bank password hunter2")
    assert (res.intent, res.matched_version, res.target_version, res.head) == ("undo", 3, 2, 2)
    assert "poison" not in mem.snapshot(APP, USER) and mem.check_integrity(APP, USER) == []


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ('"', None),
        ("NEAR(a b)", "near"),
        ("a AND OR NOT", "and"),  # only stopwords: they are kept rather than dropping all
        ("*", None),
        ("-x ^y", "x y"),
        ("((", None),
        ("col:val", "col val"),
        ("", None),
        ("   ", None),
        ("🙂" * 50, None),
        ("Ann's trip to (Oslo) AND Bergen*", "ann trip oslo bergen"),
    ],
)
def test_fts_expression_is_always_valid(raw: str, words: str | None) -> None:
    """Operators are inert: the expression is None exactly when ``raw`` has no word, and
    otherwise a valid MATCH that finds a row holding one of its words and no other row."""
    expr = fts_expression(raw)
    if words is None:
        assert expr is None
        return
    assert expr is not None
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    conn.executemany(
        "INSERT INTO t(rowid, body) VALUES (?, ?)",
        [(i + 1, w) for i, w in enumerate(words.split())] + [(99, "unrelated filler text")],
    )
    hits = {r for (r,) in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expr,))}
    assert hits == set(range(1, len(words.split()) + 1))


# -- episode scope ------------------------------------------------------------------------


def test_refers_to_episode_distinguishes_conversations_from_moments():
    from chronomem.query import refers_to_episode

    assert refers_to_episode("undo the conversation where Ann talked about Oslo")
    assert refers_to_episode("go back to right after our chat about the new job")
    assert not refers_to_episode("undo the moment in our chat where Ann mentioned Oslo")
    assert not refers_to_episode("forget the message where Ann said she moved")
    assert not refers_to_episode("undo the update about Oslo")


def _commit_turns(mem, turns):
    return [
        mem.commit(
            "a",
            "u",
            [{"op": "add", "item_id": f"t{i}", "text": t}],
            source="chat",
            reason="turn",
            labels={"session": s},
        )
        for i, (s, t) in enumerate(turns)
    ]


def test_episode_requests_snap_to_session_boundaries():
    from chronomem import ChronoMem

    turns = [
        (1, "Ann: I adopted a cat called Miso"),
        (1, "Bob: lovely, what colour is it"),
        (1, "Ann: ginger with white paws"),
        (2, "Ann: I started a pottery class on Tuesdays"),
        (2, "Bob: do you make bowls"),
        (3, "Ann: we are moving to Bergen next spring"),
    ]
    with ChronoMem(":memory:", embedder="hash") as mem:
        vids = _commit_turns(mem, turns)
        # A point reference keeps the matched turn.
        top = mem.resolve("a", "u", "go back to right after the moment Ann adopted a cat Miso")
        assert top[0][0] == vids[0]
        # An episode reference means the end of that conversation...
        top = mem.resolve(
            "a", "u", "go back to right after the conversation where Ann adopted a cat Miso"
        )
        assert top[0][0] == vids[2]
        # ...and undoing it goes to before its first turn.
        top = mem.resolve("a", "u", "undo the conversation about the pottery class on Tuesdays")
        assert top[0][0] == vids[2]
        # With the rule off, nothing is snapped.
    with ChronoMem(":memory:", embedder="hash", episode_label=None) as mem:
        vids = _commit_turns(mem, turns)
        top = mem.resolve(
            "a", "u", "go back to right after the conversation where Ann adopted a cat Miso"
        )
        assert top[0][0] == vids[0]


def test_rrf_with_a_limit_is_the_sorted_fusion_cut() -> None:
    """Item search asks for the fused top k only: the same list as sorting all and
    cutting, ties (equal fused scores) to the lower id."""
    import random

    from chronomem.resolve import rrf

    rng = random.Random(7)
    for _ in range(200):
        lists = [
            [(rng.randrange(30), 0.0) for _ in range(rng.randrange(0, 25))]
            for _ in range(rng.randrange(1, 4))
        ]
        lists = [list(dict.fromkeys(ranked)) for ranked in lists]  # an id once per list
        full = rrf(lists, 60)
        for k in (0, 1, 3, 8, 100):
            assert rrf(lists, 60, limit=k) == full[:k]
