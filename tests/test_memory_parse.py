"""The request parser (chronomem/parse.py, respelling in chronomem/cues.py, the no-content
words in chronomem/nocontent.py) and its operators over a dated history."""

from __future__ import annotations

import pytest

from chronomem import UncertainRequestError, cues
from chronomem import parse as ps
from tests._memory_fixtures import APP, USER, add, hash_store

# One write per session, LoCoMo-style stamps. Pottery comes up three times (8 May,
# 9 June, 17 July); every other topic once.
SESSIONS = [
    ("8 May, 2023", "Melanie signed up for a pottery class at the studio"),
    ("25 May, 2023", "Caroline researched adoption agencies for her family plans"),
    ("9 June, 2023", "Melanie finished a pottery bowl with a black flower pattern"),
    ("12 June, 2023", "Caroline marched in the pride parade downtown with friends"),
    ("3 July, 2023", "Melanie took the kids camping in the mountains by the lake"),
    ("17 July, 2023", "Melanie showed the pottery plate she glazed in class"),
    ("21 July, 2023", "Caroline started a new job shelving books at the library"),
    ("23 July, 2023", "Caroline adopted a guinea pig named Oscar from the shelter"),
]


def _store():
    mem = hash_store()
    vids = [
        mem.commit(APP, USER, [add(f"s{i}", text)], source="chat", reason="t",
                   valid_time=f"1:56 pm on {day}")
        for i, (day, text) in enumerate(SESSIONS)
    ]  # fmt: skip
    return mem, vids


@pytest.fixture(scope="module")
def store():
    mem, vids = _store()
    yield mem, vids
    mem.close()


# -- the parse -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "n"),
    [
        ("undo the chat three days after the pride parade", "offset", 3),
        ("forget the one two weeks before the camping trip", "offset", -14),
        ("remove the day after the pride parade", "offset", 1),
        ("forget the first chat after the one about the pride parade", "step", 1),
        ("go back to the conversation right before the one where Oscar came", "step", -1),
        ("undo the previous chat before the camping one", "step", -1),
        ("undo the second time Melanie talked about pottery", "ordinal", 2),
        ("go back to the last time we talked about pottery", "ordinal", -1),
        ("go back to when you didn't know yet that Caroline wanted to adopt", "ordinal", 1),
        ("take me back to before you found out about the library job", "ordinal", 1),
        ("the Monday chat about pottery, undo it", "weekday", 0),
        ("undo everything from when Melanie first told me about pottery", "ordinal", 1),
        ("keep things up to the point where camping first came up", "ordinal", 1),
        ("go back to when Caroline originally mentioned the pride parade", "ordinal", 1),
        ("wipe it back to before Caroline ever brought up adoption", "ordinal", 1),
        ("undo from the very first mention of pottery", "ordinal", 1),
        ("forget the earliest conversation about pottery", "ordinal", 1),
    ],
)
def test_each_operator_is_read(text: str, kind: str, n: int) -> None:
    op = ps.parse(text).operator(kind)
    assert op is not None and op.n == n


@pytest.mark.parametrize(
    "text",
    [
        "forget the chat about the pride parade and everything after",
        "go back to right after the camping trip",
        "James picking up drumsticks for the first time - go back to that chat",
        "undo the conversation where Caroline got the library job",
        "keep only our first chat, the one where Caroline marched in the parade",
        "her first pottery bowl - forget it and what came after",
        "the best thing Melanie ever told me about pottery, undo it",
    ],
)
def test_plain_requests_carry_no_operator(text: str) -> None:
    assert ps.parse(text).operators == ()


def test_knowledge_state_is_an_undo_of_the_first_mention() -> None:
    p = ps.parse("go back to when you didn't know yet that Melanie did pottery")
    assert p.intent == "undo" and p.knowledge
    assert "pottery" in p.content and "know" not in p.clause


def test_a_first_mention_leaves_the_topic_and_the_intent() -> None:
    """The adverb and its verb of telling leave the clause (the verb names no content and
    must not decide which commits count as mentions); "before" stays, so "before ...
    ever mentioned" is still an undo."""
    p = ps.parse("go back to before Melanie ever mentioned pottery")
    assert p.intent == "undo" and p.content == ("melanie", "pottery")
    p = ps.parse("go back to when Melanie first brought up pottery")
    assert p.intent == "restore_to" and p.content == ("melanie", "pottery")


def test_step_words_are_not_intent_cues() -> None:
    # "before" is an erasure cue on its own; inside "the chat right before X" it is not.
    assert ps.parse("go back to the chat right before the camping trip").intent == "restore_to"


@pytest.mark.parametrize(
    ("text", "clause", "excluded"),
    [
        ("not the pottery workshop chat, the one about the plate - undo that", "plate", "workshop"),
        ("forget the chat about the camping trip, not the biking one", "camping", "biking"),
        ("undo the parade chat rather than the library one", "parade", "library"),
        ("go back to the mountains chat instead of the beach camping one", "mountains", "beach"),
    ],
)
def test_negation_splits_the_ruled_out_clause(text: str, clause: str, excluded: str) -> None:
    p = ps.parse(text)
    assert clause in p.clause and excluded not in p.clause
    assert len(p.excluded) == 1 and excluded in p.excluded[0]


def test_a_not_inside_content_is_content() -> None:
    assert ps.parse("undo the chat where I said I'm not sure about the move").excluded == ()


@pytest.mark.parametrize(
    ("text", "verb"),
    [
        ("plz fogret the chat about oscar", "forget"),
        ("cn u delte the convo abt oscar", "delete"),
        ("rmeove the biking trip chat pls", "remove"),
        ("revrt to rite after the talent show", "revert"),
        ("undoo the chat about the library", "undo"),
    ],
)
def test_misspelt_cue_verbs_are_respelt(text: str, verb: str) -> None:
    p = ps.parse(text)
    assert verb in p.normal.split()
    assert p.intent in ("undo", "restore_to")


def test_content_words_near_a_verb_stay() -> None:
    normal, changed = cues.respell("the remote work chat about the forge")
    assert normal == "the remote work chat about the forge" and changed == []


def test_a_month_describing_the_event_filters_and_a_day_stays_a_bound() -> None:
    filt = ps.parse("forget the March chat about the gym")
    assert filt.time is not None and filt.time.kind == "month" and filt.time.value[0] == 3
    day = ps.parse("the 3 July chat and everything after it")
    assert day.time is not None and day.time.kind != "month"
    assert ps.parse("you may call it the pottery chat").time is None


def test_a_month_used_as_an_adjective_describes_the_event() -> None:
    # "keep up to the June health scare" names an event in June, not "keep through June"
    for text in ("keep up to the June health scare", "forget our May trip to the coast"):
        got = ps.parse(text).time
        assert got is not None and got.kind == "month", text
    # a day after the month, or the month as a noun, stays a bound
    assert ps.parse("keep up to the June 3 chat").time.kind != "month"
    assert ps.parse("keep up to the end of June").time.kind != "month"
    assert ps.parse("everything through the May of 2023").time.kind != "month"


def test_filler_is_not_named_content() -> None:
    for text in (
        "hi there! could you undo what I said before?",
        "hey, would you mind removing that from earlier today?",
        "please forget the last thing, thanks so much",
    ):
        assert ps.parse(text).named == (), text


def test_a_request_left_with_only_no_content_words_names_nothing() -> None:
    # one request per class of NO_CONTENT
    for text in (
        "oops! take that back please",
        "sorry, my bad, I changed my mind, undo",
        "lol forget everything from a minute ago",
        "good evening! delete what I just wrote",
        "please roll back the most recent couple",
        "revert to where we were before, if you don't mind",
        "wait, no. delete that",
        "hmm actually forget the other thing too",
        "delete the info I gave you last time",
        "please clear out the newest memories, thank you kindly",
        "go back two steps",
    ):
        assert not ps.parse(text).names_content, text


def test_courtesy_formulas_name_nothing_but_their_words_stay_topics() -> None:
    for text in (
        "hey there, hope you're doing great! could you undo what I said earlier?",
        "appreciate it, you're the best. now forget what I mentioned a moment ago",
        "thank you so much for your help today, but please remove what I just said",
        "greetings! please forget what I said just now, have a nice day",
    ):
        assert not ps.parse(text).names_content, text
    # the same words outside the formula are a topic
    for text in ("undo what I said about my best friend", "forget that I love hiking"):
        assert ps.parse(text).names_content, text
    assert ps.parse("hope you are doing well, forget the pottery class").names_content


def test_asides_about_the_listener_name_nothing() -> None:
    for text in (
        "you're a star, thanks. now forget that",
        "thanks for your patience - undo it please",
        "love you lots! roll that back",
        "whenever you have a minute, take back what I just said",
        "hey pal, hope your weekend was fun. scrap what I said",
        "it's been a long week, sorry, drop that. take care",
    ):
        assert not ps.parse(text).names_content, text
        assert ps.parse(text).evidence == (), text


def test_a_stretch_about_you_that_carries_the_request_stays_content() -> None:
    # a request verb, a verb of telling, or a longer stretch keeps its words
    for text, word in (
        ("could you forget the pottery class", "pottery"),
        ("you told me about the pottery class, forget it", "pottery"),
        ("the outdoor concert for her birthday shouldn't be in your memory", "concert"),
        ("Deborah got a thank-you letter for her yoga teaching. Go back to after that", "yoga"),
    ):
        assert word in ps.parse(text).evidence, text


def test_the_new_no_content_classes_leave_a_named_topic_named() -> None:
    # "update", "shared" and "two" name nothing alone; beside a topic the request acts
    parsed = ps.parse("undo the update where I shared the two pottery bowls")
    assert parsed.names_content
    assert "pottery" in parsed.named and "bowls" in parsed.named


def test_no_content_words_beside_a_topic_stay_evidence_words() -> None:
    # The request names the pottery class, so it acts, matched on the same words as
    # before the classes existed.
    parsed = ps.parse("oops, undo the chat where I wrote about the pottery class")
    assert parsed.names_content
    assert parsed.named == ("oops", "wrote", "pottery", "class")


# -- operators over the dated history ----------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "session"),  # session: 1-based index of the version the top target is
    [
        # offsets: 12 June + 21 days = 3 July; 17 July - 14 days = 3 July
        ("go back to the chat three weeks after the pride parade", 5),
        ("go back to the one two weeks before the pottery plate chat", 5),
        # steps
        ("go back to the first chat after the one about the camping trip", 6),
        ("go back to the conversation right before the one about the camping trip", 4),
        ("undo the next chat after the library job one", 7),  # undo S8 -> S7
        # ordinals over the three pottery sessions
        ("go back to the second time Melanie talked about pottery", 3),
        ("go back to the last time Melanie talked about pottery", 6),
        ("go back to the first time Melanie talked about pottery", 1),
        ("go back to when Melanie first told me about pottery", 1),
        # knowledge state: undo the first pottery session -> the empty root
        ("restore you to when you didn't know yet that Melanie did pottery", 0),
        # a month that describes the event
        ("go back to the July chat about pottery", 6),
        ("go back to the June chat about pottery", 3),
        # negation
        ("go back to the pottery bowl chat, not the pottery plate one", 3),
        ("go back to the pottery plate chat rather than the pottery bowl one", 6),
    ],
)
def test_operators_move_from_the_event_to_the_episode_meant(store, query, session) -> None:
    mem, vids = store
    got = mem.resolve(APP, USER, query, k=3)
    want = 0 if session == 0 else vids[session - 1]
    assert got[0][0] == want, (query, got)


@pytest.mark.parametrize(
    ("query", "session"),
    [
        ("go back to the first time Melanie talked about pottery", 1),
        ("go back to the second time Melanie talked about pottery", 3),
        ("go back to when Melanie first told me about pottery", 1),
    ],
)
def test_ordinals_count_mentions_without_a_lexical_stage(store, query, session) -> None:
    """A dense-only stage has no lexical scores: the commits holding the clause's
    specific word are the mentions, not every candidate (the earliest of which would be
    the empty-topic first chat)."""
    mem, vids = store
    got = mem.resolve(APP, USER, query, k=3, stage="dense")
    assert got[0][0] == vids[session - 1], (query, got)


def test_the_plan_shows_the_parse_and_the_step(store) -> None:
    mem, vids = store
    plan = mem.rollback_to_version_by_nl_query(
        APP, USER, "go back to the chat three weeks after the pride parade", preview=True
    )
    assert plan.target_version == vids[4]
    parsed = plan.evidence["parse"]
    assert parsed["operators"][0]["kind"] == "offset" and parsed["operators"][0]["n"] == 21
    steps = plan.evidence["steps"]
    assert steps["event"] == vids[3] and steps["landed"] == vids[4]


# -- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "request_text",
    [
        "hi there! could you undo what I said before?",
        "never mind, just roll it back a bit",
        "forget what I told you yesterday",
        "hello, good morning, please revert the latest one",
        "sorry, my bad, I changed my mind about what I wrote a minute ago",
        "revert to where we were before, if you don't mind",
    ],
)
def test_requests_naming_no_content_are_refused(store, request_text: str) -> None:
    mem, _ = store
    with pytest.raises(UncertainRequestError, match="names no content"):
        mem.plan_rollback_by_nl_query(APP, USER, request_text)
    with pytest.raises(UncertainRequestError, match="names no content"):
        mem.plan_selective_undo(APP, USER, request_text)


@pytest.mark.parametrize(
    "request_text",
    [
        "forget about the climbing gym membership at the library",
        "undo the chat about my trip to Antarctica on an icebreaker ship",
    ],
)
def test_content_the_memory_never_held_is_refused(store, request_text: str) -> None:
    mem, _ = store
    with pytest.raises(UncertainRequestError, match="does not hold|no content word"):
        mem.plan_rollback_by_nl_query(APP, USER, request_text)
    with pytest.raises(UncertainRequestError, match="does not hold|no content word"):
        mem.plan_selective_undo(APP, USER, request_text)


def test_a_named_event_still_acts(store) -> None:
    mem, vids = store
    plan = mem.plan_rollback_by_nl_query(APP, USER, "forget the pride parade downtown")
    assert plan.target_version == vids[2]
    sel = mem.plan_selective_undo(APP, USER, "forget the guinea pig named Oscar")
    assert sel.evidence["matched"][0][0] == vids[7]


def three_fact_store(first: str):
    """A hash-embedder store of ``first`` and two unrelated facts, one commit each."""
    mem = hash_store()
    for i, text in enumerate(
        [
            first,
            "Melanie went to a pottery class with her kids",
            "Caroline got a job at the library downtown",
        ]
    ):
        mem.commit(APP, USER, [add(f"f{i}", text)], source="chat", reason="t")
    return mem


def test_no_content_words_never_count_as_a_match() -> None:
    # "update" and "two" occur in the memory, "glassblowing" and "kilns" nowhere: the
    # request shares only words that name nothing, so it is refused, not acted on.
    mem = three_fact_store("Caroline posted an update: her two cats are doing fine")
    try:
        for call in (mem.plan_rollback_by_nl_query, mem.plan_selective_undo):
            with pytest.raises(UncertainRequestError, match="does not hold|no content word"):
                call(APP, USER, "forget the update about the two glassblowing kilns")
        assert mem.plan_rollback_by_nl_query(APP, USER, "forget the update about the two cats")
    finally:
        mem.close()


def test_a_match_on_frame_words_alone_is_weak() -> None:
    # "plan" and "learn" occur in the memory, "glassblowing" nowhere: the request names
    # something the memory never held, and it must be refused, not act on the guitar.
    mem = three_fact_store("Caroline plans to learn the guitar this summer")
    try:
        for call in (mem.plan_rollback_by_nl_query, mem.plan_selective_undo):
            with pytest.raises(UncertainRequestError, match="does not hold"):
                call(APP, USER, "forget my plan to learn glassblowing")
        # the same frame beside a word the memory holds still acts
        assert mem.plan_rollback_by_nl_query(APP, USER, "forget my plan to learn the guitar")
    finally:
        mem.close()


def test_short_exclamations_that_ask_and_tell_nothing_name_nothing() -> None:
    for text in (
        "hey stranger! undo what I said earlier please",
        "hope the family's doing well! forget what I said before",
        "danke schön! erase the earlier stuff please",
        "such a lovely day today! could you erase that thing from before?",
    ):
        assert not ps.parse(text).names_content, text
    # an exclamation that tells something, or names it with a verb of telling, stays
    for text, word in (
        ("Caroline's pride parade was amazing! forget it and what came after", "parade"),
        ("Melanie told me about her pottery class! undo that", "pottery"),
        ("forget the pottery class!", "pottery"),
    ):
        assert word in ps.parse(text).evidence, text


def test_drawn_out_words_are_read_with_one_letter() -> None:
    assert not ps.parse("hiii 👋 forget what I said b4 pls").names_content
    assert not ps.parse("plz fogret wat i sed b4 thx").names_content
    assert "pottery" in ps.parse("sooo, forget the pottery class").evidence


def test_hedges_and_small_talk_formulas_name_nothing() -> None:
    for text in (
        "is it possible to undo what I said before?",
        "I was wondering whether you could possibly forget that thing I told you",
        "gracias amigo, please undo what I mentioned",
        "could you do me a solid and scrap what I said before",
        "so, funny story, I didn't mean what I said earlier. undo please",
        "good night! and please undo that thing, sweet dreams",
        "I'd rather you didn't keep what I said before. thanks for understanding",
    ):
        assert not ps.parse(text).names_content, text
    # the same words naming something stay content
    assert "apologize" in ps.parse("undo the chat where Caroline wrote to apologize").evidence
    assert "story" in ps.parse("forget Joanna's story about the brave turtle").evidence


def test_a_holiday_greeting_is_no_date_bound() -> None:
    parsed = ps.parse("happy new year! please undo whatever I told you before")
    assert parsed.time is None and not parsed.names_content
    assert not ps.parse("merry christmas, forget what I said").names_content
    # the holiday named as a time is still read as one
    assert ps.parse("undo everything since new year").time is not None


def test_an_attention_word_and_a_disavowal_name_nothing() -> None:
    assert not ps.parse("listen, I didn't mean it, please take it back").names_content
    assert "jazz" in ps.parse("forget that I listen to jazz").evidence
