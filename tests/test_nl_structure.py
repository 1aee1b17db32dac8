"""Negation, contrast and told-noun ordinals read as a grammar (chronomem/parse.py).

Every phrasing here is written for this test, none is a line of a request set: each
shape must hold for a writer the rules were not fitted to."""

from __future__ import annotations

import pytest

from chronomem import ChronoMem
from chronomem import parse as ps
from tests._memory_fixtures import hash_store


@pytest.mark.parametrize(
    ("text", "meant", "ruled_out"),
    [
        # leading "not X, Y" where X is any noun phrase or clause, not only "the X chat"
        ("not the sailing lesson, the one where she finally bought the boat. undo from there",
         "boat", "sailing"),
        ("Not when Priya moved flats, the week her landlord sold the building. forget that chat",
         "landlord", "flats"),
        ("no, not the dentist visit - the chat about the root canal, roll back to before it",
         "canal", "dentist"),
        # a shared head before the "not"
        ("the wedding planning: not the venue visit, the cake tasting. forget from that chat",
         "cake", "venue"),
        ("the bakery idea, not the loan, the chat where Omar signed the lease. undo from there",
         "lease", "loan"),
        # "I don't mean X, I mean Y"
        ("I don't mean the yoga retreat, I mean the chat about her new studio", "studio",
         "retreat"),
        ("don't mean the trip to Oslo; I mean the one to Bergen, undo that", "bergen", "oslo"),
        # trailing "Y, not X" with a plain noun phrase or clause
        ("forget the recital chat - not the rehearsal", "recital", "rehearsal"),
        ("roll back to the hiking trip, not when we talked about the boots", "hiking", "boots"),
        # self-correction
        ("undo the chess club chat? no, the one about the tournament in Boston", "tournament",
         "chess"),
        ("forget the piano stuff... no wait, the guitar lessons", "guitar", "piano"),
    ],
)  # fmt: skip
def test_negation_shapes(text: str, meant: str, ruled_out: str) -> None:
    p = ps.parse(text)
    assert meant in p.clause.lower(), p.describe()
    assert ruled_out not in p.clause.lower(), p.describe()
    assert len(p.excluded) == 1 and ruled_out in p.excluded[0].lower(), p.describe()


@pytest.mark.parametrize(
    ("text", "topic", "owner"),
    [
        ("not Tom's marathon in March, Lisa's one in May. undo from that chat", "marathon", "tom"),
        ("not Ben's guitar from the pawn shop, Sara's one. forget from there", "guitar", "ben"),
        ("not when Kim asked whether the new Zelda was worth it, the chat where she'd beaten it",
         "zelda", None),  # a clause's subject is the meant clause's "she": it stays
    ],
)  # fmt: skip
def test_a_pro_form_takes_the_ruled_out_topic_not_its_owner(
    text: str, topic: str, owner: str | None
) -> None:
    clause = ps.parse(text).clause.lower()
    assert topic in clause and (owner is None or owner not in clause.split())


def test_a_pro_form_with_a_shared_head_reads_the_head() -> None:
    p = ps.parse("the laptop dying: not the old one, the brand new one. undo from that chat")
    assert "laptop" in p.clause and "old" not in p.clause
    assert "laptop" in p.excluded[0] and "old" in p.excluded[0]


@pytest.mark.parametrize(
    "text",
    [
        "I didn't mean it, please take it back",
        "not sure when, but undo the chat about the garden",
        "hey, not to bother you, but forget the chat about the garden",
        "undo the chat where Ann said she was not coming to the party",
        "no, not that, undo the chat about the garden",
    ],
)
def test_a_not_that_rules_nothing_out_is_no_negation(text: str) -> None:
    assert ps.parse(text).excluded == ()


@pytest.mark.parametrize(
    ("text", "n", "noun"),
    [
        ("undo the second injury he mentioned and everything after", 2, "injury"),
        ("go back to the third recipe Ann told me about", 3, "recipe"),
        ("forget from the last promotion she brought up onwards", -1, "promotion"),
    ],
)
def test_an_ordinal_on_a_told_noun_counts_its_mentions(text: str, n: int, noun: str) -> None:
    p = ps.parse(text)
    op = p.operator("ordinal")
    assert op is not None and op.n == n
    assert noun in p.clause and not any(v in p.clause for v in ("told", "mentioned", "brought"))


@pytest.mark.parametrize(
    "text", ["undo the second game of the season", "forget the first day of school chat"]
)
def test_an_ordinal_on_a_noun_nobody_tells_is_content(text: str) -> None:
    assert ps.parse(text).operator("ordinal") is None


SESSIONS = [
    ("1:00 pm on 3 March, 2023", "Tom: I ran the city marathon last weekend, my knees hurt"),
    ("1:00 pm on 10 March, 2023", "Ann: the weather was grey all week, I stayed home reading"),
    ("1:00 pm on 17 May, 2023", "Lisa: I finished my first marathon by the lake in May"),
    ("1:00 pm on 24 May, 2023", "Ann: I planted tomatoes and basil in the garden"),
]


def _chats(dated: list[tuple[str, str]]) -> tuple[ChronoMem, list[int]]:
    """A store with one chat (session) per ``(date, text)``, in order."""
    mem = hash_store()
    vids = [
        mem.commit("a", "u", [{"op": "add", "item_id": f"s{i}", "text": t}], source="chat",
                   reason="t", labels={"session": i}, valid_time=day)
        for i, (day, t) in enumerate(dated)
    ]  # fmt: skip
    return mem, vids


def _messages(rows: list[tuple[int, str]]) -> tuple[ChronoMem, list[int]]:
    """A store with one message per ``(chat, text)``, each labelled with its chat and dated
    on day chat + 1 of June 2023: the turn-level stores below."""
    mem = hash_store()
    vids = [
        mem.commit("a", "u", [{"op": "add", "item_id": f"m{i}", "text": t}], source="chat",
                   reason="t", labels={"session": s}, valid_time=f"1:00 pm on {s + 1} June, 2023")
        for i, (s, t) in enumerate(rows)
    ]  # fmt: skip
    return mem, vids


def _june(texts: list[str]) -> list[tuple[str, str]]:
    return [(f"1:00 pm on {i + 1} June, 2023", t) for i, t in enumerate(texts)]


@pytest.fixture(scope="module")
def store():
    mem, vids = _chats(SESSIONS)
    yield mem, vids
    mem.close()


def _target(mem: ChronoMem, query: str) -> int:
    return mem.rollback_to_version_by_nl_query("a", "u", query, preview=True).target_version


def test_the_ruled_out_episode_is_skipped_and_the_pro_form_finds_the_meant_one(store) -> None:
    mem, vids = store
    # Lisa's marathon (the third session) is meant; Tom's is ruled out: undo from the third.
    assert _target(mem, "not Tom's marathon, Lisa's one. undo from that chat") == vids[1]
    assert _target(mem, "I don't mean Tom's marathon, I mean Lisa's one, undo it") == vids[1]


@pytest.mark.parametrize(
    ("text", "verb"),
    [
        ("undo the second time Priya brought up rowing, and everything after", "brought"),
        ("forget from the third time Omar talked about the bakery", "talked"),
        ("go back to the last time Lena mentioned her cello", "mentioned"),
    ],
)
def test_an_ordinals_verb_of_telling_leaves_the_clause(text: str, verb: str) -> None:
    p = ps.parse(text)
    assert p.operator("ordinal") is not None and verb not in p.clause


MENTIONS = [
    "Ann: my neighbour brought home a puppy and called it a rescue, my assistant says",
    "Ann: Biscuit is our new dog, a puppy from the shelter",
    "Ann: my manager made me stay late at work, a strict manager",
    "Ann: big news, I was made assistant manager at the store",
    "Ann: we watched curling all evening, the curling final, curling is so tense",
    "Ann: the weather was grey all week so I stayed in and read two long novels by the "
    "fire, then went to curling practice on Monday night with my assistant coach",
    "Ann: Biscuit chewed my shoes again",
]


@pytest.fixture(scope="module")
def mentions():
    mem, vids = _chats(_june(MENTIONS))
    yield mem, vids
    mem.close()


@pytest.mark.parametrize(
    ("query", "first"),  # first: index of the mention meant; the undo lands just before it
    [
        # a written name identifies the fact, though another chat matches more words
        ("go back to before you knew Ann had brought home a puppy called Biscuit", 1),
        ("roll back to when you didn't know about the dog named Biscuit", 1),
        # a noun compound counts only whole: "my manager" is no mention of the promotion
        ("go back to before you knew Ann had been made assistant manager", 3),
        ("roll back to before you found out Ann was made assistant manager at the store", 3),
        # "the second time" admits a passing mention beside a chat that dwells on it
        ("undo the second time curling came up", 5),
        ("forget from the second time Ann brought up curling onwards", 5),
    ],
)
def test_mentions_of_a_fact_or_topic(mentions, query: str, first: int) -> None:
    mem, vids = mentions
    assert _target(mem, query) == vids[first - 1], query


CONTRAST = [
    "Ann: I swam across the lake for the animal shelter, a charity swim, so cold",
    "Bob: the weather turned and we stayed in all weekend playing cards",
    "Bob: well done Ann, the shelter award for your charity swim! I did a charity swim "
    "too, for the veterans",
    "Ann: I planted tomatoes and basil in the garden",
]


@pytest.fixture(scope="module")
def contrast():
    mem, vids = _chats(_june(CONTRAST))
    yield mem, vids
    mem.close()


@pytest.mark.parametrize(
    "query",
    [
        "undo from Bob's one for the veterans, not Ann's swim for the shelter",
        "I don't mean Ann's swim for the shelter, I mean Bob's one for the veterans, undo it",
    ],
)
def test_a_ruled_out_clause_that_names_the_meant_chat_means_its_next_best(
    contrast, query: str
) -> None:
    # The third chat mentions Ann, the shelter and a charity swim too; the meant clause
    # singles it out more clearly, so the ruled-out swim is the first chat's. (Where
    # both single it out equally, the exclusion stands, as before.)
    mem, vids = contrast
    assert _target(mem, query) == vids[1]


@pytest.mark.parametrize(
    ("text", "kind", "n", "left"),
    [
        # a relative clause about talking between the chat and its direction
        ("forget the next time we talked after Ann moved to Leeds", "step", 1, "Leeds"),
        ("undo from the first time we spoke after the wedding", "step", 1, "wedding"),
        ("undo the one we had just before the wedding", "step", -1, "wedding"),
        ("keep up to the last time we talked before the move", "step", -1, "move"),
        # "later than" / "earlier than" with a count
        ("forget the chat a few days later than the race", "offset", 3, "race"),
        ("undo the session two weeks earlier than the recital", "offset", -14, "recital"),
    ],
)
def test_steps_and_offsets_with_a_clause_about_talking(
    text: str, kind: str, n: int, left: str
) -> None:
    p = ps.parse(text)
    op = p.operator(kind)
    assert op is not None and op.n == n, p.describe()
    assert p.operator("ordinal") is None and left in p.clause
    assert not any(w in p.clause.split() for w in ("talked", "spoke", "had", "later"))


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("undo the chess club chat? no, the one about the tournament in Boston", "undo"),
        ("forget the piano stuff... no wait, the guitar lessons", "undo"),
        ("wipe the bit about the gym, sorry, no, the swimming pool one", "undo"),
        ("take me back to the chat about the lake? no, the one about the river", "restore_to"),
    ],
)  # fmt: skip
def test_a_self_correction_keeps_the_verb_it_takes_back(text: str, intent: str) -> None:
    """The verb may sit in the ruled-out part: the request still asks what it says."""
    p = ps.parse(text)
    assert p.excluded and p.intent == intent, p.describe()


# Turn granularity: one commit per message, chats grouped by their session label.
TURNS = [
    (0, "Ann: new running shoes"),
    (0, "Bob: they look comfy, where did you get them"),
    (1, "Bob: hey Ann, big week: I started giving pottery workshops for beginners at the "
        "community hall on Tuesday and Thursday evenings after work"),
    (1, "Ann: how did it go"),
    (1, "Bob: the pottery workshops went really well, everyone was keen"),
    (2, "Ann: Maple is our new kitten, a kitten from my aunt"),
    (2, "Bob: my cousin adopted a kitten last year too"),
    (3, "Ann: Maple knocked my plant over again"),
]  # fmt: skip


@pytest.fixture(scope="module")
def turns():
    mem, vids = _messages(TURNS)
    yield mem, vids
    mem.close()


@pytest.mark.parametrize(
    ("query", "first"),  # first: index of the message meant; the undo lands just before it
    [
        # the topic's words come from the best-ranked message, not from a short message
        # that holds one of them ("running shoes") and outscores it lexically by length
        ("go back to right before you first heard Bob was running pottery workshops", 2),
        ("roll back to before you knew that Bob runs pottery workshops now", 2),
        # a written name identifies the fact even when the best match holds it too
        ("undo to before you learnt Ann got a kitten named Maple", 5),
        ("go back to before the first time Maple the kitten came up", 5),
    ],
)
def test_a_first_mention_at_turn_level(turns, query: str, first: int) -> None:
    mem, vids = turns
    assert _target(mem, query) == vids[first - 1], query


SPEAKERS = [
    (0, "Lena: I baked bread all weekend"),
    (1, "Lena: by the way, have you been to the glass museum in Corning? I plan to go"),
    (1, "Raj: not yet, but the glass museum in Corning is on my list, the glass museum is "
        "meant to be great, have you been?"),
    (1, "Lena: no, first time next month"),
    (2, "Raj: my sister visited the harbour"),
]  # fmt: skip


@pytest.fixture(scope="module")
def speakers():
    mem, vids = _messages(SPEAKERS)
    yield mem, vids
    mem.close()


@pytest.mark.parametrize(
    ("query", "meant"),
    [
        # both speakers named: the one written first said it, the other is addressed
        ("keep everything through Lena asking Raj about the glass museum in Corning", 1),
        ("keep it all up to when Lena asked Raj whether he'd seen the Corning glass museum", 1),
        ("keep everything through Raj telling Lena the glass museum in Corning is on his list", 2),
    ],
)
def test_the_first_named_speaker_said_it(speakers, query: str, meant: int) -> None:
    mem, vids = speakers
    assert _target(mem, query) == vids[meant], query


TELLING = [
    (0, "Ana: I repainted the kitchen a pale green"),
    (1, "Ana: guess what, on Friday I signed up for a salsa class at the dance studio"),
    (1, "Ben: fun! how did it go?"),
    (1, "Ana: the salsa class was amazing, salsa is my new thing, the salsa teacher is great "
        "and the studio has a lovely floor"),
    (2, "Ana: back from the costume party at Kim's, so tired"),
    (2, "Ben: nice, what did you go as?"),
    (2, "Ana: I wore my dragon mask, everyone at the party loved the dragon mask"),
    (3, "Ben: my cat slept all day"),
]  # fmt: skip


@pytest.fixture(scope="module")
def telling():
    mem, vids = _messages(TELLING)
    yield mem, vids
    mem.close()


@pytest.mark.parametrize(
    ("query", "first"),  # first: index of the message meant; the undo lands just before it
    [
        # an undo cuts before the first message of the chat that tells the event, not
        # before a later one that dwells on it
        ("undo everything since Ana started her salsa class", 1),
        ("go back to before you knew Ana took up salsa", 1),
        # the earlier message must hold the event's most specific word: the party is not
        # the mask
        ("go back to just before Ana described wearing her dragon mask to the party", 6),
        ("undo from where Ana told Ben about the dragon mask", 6),
    ],
)
def test_an_undo_cuts_before_the_first_telling_in_the_chat(telling, query: str, first: int) -> None:
    mem, vids = telling
    assert _target(mem, query) == vids[first - 1], query
