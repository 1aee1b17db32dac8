"""The meaning stage's reader: a language model's likelihood of the request's event
under each candidate chat (chronomem.reader).

Scripted models stand in for the language model (what is tested is which chats are
shown, what is scored, and the decision), on a real SQLite store with the real parser,
retrieval, reranker and meaning stage. The CTranslate2 scorer itself is tested with the
packaged Qwen where it is installed (``slow``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from chronomem import ChronoMem
from chronomem.meaning import MeaningStage
from chronomem.reader import ReaderStage, context, continuation, event_span, read
from tests.test_meaning_stage import SESSIONS, ConceptEmbedder, _store

APP, USER = "app", "u"


class Keyword:
    """Scores a chat by whether its lines hold ``word``; counts what it was asked."""

    def __init__(self, word: str, gain: float = 5.0) -> None:
        self.word, self.gain = word, gain
        self.pairs: list[tuple[str, str]] = []

    def loglik(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        self.pairs.extend(pairs)
        return [-20.0 + (self.gain if self.word in ctx.lower() else 0.0) for ctx, _ in pairs]


@pytest.mark.parametrize(
    ("text", "event"),
    [
        ("Take my notes back to before Nate went and got his mop recoloured", "Nate went and got his mop recoloured"),
        ("Undo the chat where Nate spotted Joanna's badge.", "Nate spotted Joanna's badge"),
        ("Sorry to ask. Could you rewind to where things stood after Jo got back from her drive? Thanks!", "Jo got back from her drive"),
        ("forget the talk about my trip to Paris", "my trip to Paris"),
        ("undo that", "undo that"),
    ],
)  # fmt: skip
def test_the_event_is_what_follows_the_word_that_places_it(text: str, event: str) -> None:
    assert event_span(text) == event


def test_the_model_sees_a_date_and_lines_and_scores_only_the_event() -> None:
    ctx = context(["[1:00 pm on 3 May, 2023] Caroline: I   rode my bike.", "Melanie: Far?"])
    assert ctx.startswith("Part of a conversation from 3 May, 2023:\nCaroline: I rode my bike.")
    assert "Melanie: Far?" in ctx and ctx.endswith('conversation: "')
    assert continuation("Please undo the chat where she rode her bike. Thanks") == (
        ' she rode her bike"'
    )


def test_read_picks_the_likeliest_chat_when_it_leads_by_the_margin() -> None:
    model = Keyword("bike")
    stage = ReaderStage(model, margin=1.0)
    cands = {4: ["We ate cake."], 2: ["I rode my bike.", "Nice."], 7: []}
    pick, scores = read(stage, "undo the chat where she cycled", cands)
    assert pick == 2 and scores == {2: -15.0, 4: -20.0}  # a chat with no lines is not read
    assert all(line.count("\n") >= 2 for line, _ in model.pairs)
    assert read(replace(stage, margin=6.0), "undo the chat where she cycled", cands)[0] is None
    assert read(stage, "x", {1: ["only one"]}) == (None, {})


def _reader_store(word: str, **kw: object) -> tuple[ChronoMem, list[int], Keyword]:
    model = Keyword(word)
    stage = MeaningStage(ConceptEmbedder(), reader=ReaderStage(model, **kw))
    mem, vids = _store(stage)
    return mem, vids, model


def test_the_readers_clear_pick_replaces_the_embedders() -> None:
    # The concept embedder reads the biking chat; a reader sure of the wedding wins.
    request = "go back to when Caroline's crew went pedalling downtown"
    mem, vids, model = _reader_store("wedding")
    assert mem.resolve(APP, USER, request, k=3, intent="restore_to")[0][0] == vids[2]
    assert {q for _, q in model.pairs} == {" Caroline's crew went pedalling downtown\""}


def test_the_plan_shows_the_readers_scores() -> None:
    mem, vids, _ = _reader_store("biking")
    plan = mem.plan_rollback_by_nl_query(
        APP, USER, "go back to when Caroline's crew went pedalling downtown, keep that chat"
    )
    step = plan.evidence["steps"]["meaning"]
    assert step["moved"] and step["commit"] == vids[1] == plan.matched_version
    assert step["reader"][str(vids[1])] == -15.0 and len(step["reader"]) >= 2


def test_an_unsure_reader_leaves_the_embedders_pick() -> None:
    request = "go back to when Caroline's crew went pedalling downtown"
    mem, vids, _ = _reader_store("wedding", margin=50.0)
    assert mem.resolve(APP, USER, request, k=3, intent="restore_to")[0][0] == vids[1]


def test_a_request_the_rules_place_never_reaches_the_reader() -> None:
    mem, _, model = _reader_store("wedding")
    mem.resolve(APP, USER, "not the pottery one, restore to when Caroline's crew went pedalling downtown", k=3)  # fmt: skip
    mem.resolve(APP, USER, "restore to the pottery class where the bowl cracked in the kiln", k=3)
    assert model.pairs == []


def test_bad_reader_settings_are_refused() -> None:
    with pytest.raises(TypeError, match="loglik"):
        ReaderStage(object())
    with pytest.raises(ValueError, match="margin"):
        ReaderStage(Keyword("x"), margin=-1.0)
    with pytest.raises(TypeError, match="ReaderStage"):
        MeaningStage(ConceptEmbedder(), reader=Keyword("x"))


def test_cached_scores_are_read_back_not_recomputed(tmp_path: Path) -> None:
    from chronobench.backbones.likelihood_cache import CachedLikelihood

    inner = Keyword("bike")
    cache = CachedLikelihood(inner, tmp_path / "ll.sqlite")
    pairs = [("I rode my bike.", " a ride"), ("We ate cake.", " a ride")]
    assert cache.loglik(pairs) == [-15.0, -20.0]
    assert cache.loglik(pairs[::-1]) == [-20.0, -15.0] and len(inner.pairs) == 2
    cache.close()
    again = CachedLikelihood(Keyword("cake"), tmp_path / "ll.sqlite")  # same name and model
    assert again.loglik(pairs) == [-15.0, -20.0] and (again.hits, again.misses) == (2, 0)
    again.close()


@pytest.mark.slow
def test_qwen_on_ctranslate2_scores_a_continuation_by_its_context() -> None:
    pytest.importorskip("ctranslate2")
    from chronobench.backbones.ct2_backend import CT2Backbone
    from chronobench.backbones.packaged import gguf_path

    try:
        gguf_path("qwen2.5-1.5b")
    except FileNotFoundError:
        pytest.skip("python -m chronobench install-model qwen-1b5")
    model = CT2Backbone("qwen-1b5", threads=2)
    bike, cake = model.loglik(
        [(context([SESSIONS[1][0]]), ' Caroline went cycling"'), (context([SESSIONS[2][0]]), ' Caroline went cycling"')]
    )  # fmt: skip
    assert bike > cake


def test_a_lazy_model_loads_on_its_first_score_only() -> None:
    from chronobench.backbones.likelihood_cache import LazyLikelihood

    built: list[Keyword] = []

    def load() -> Keyword:
        built.append(Keyword("bike"))
        return built[-1]

    lazy = LazyLikelihood(load, "kw", "kw-model", {"runtime": "test"})
    assert built == [] and lazy.cache_config == {"runtime": "test"}
    assert lazy.loglik([("bike", " x")]) == [-15.0] and lazy.loglik([("no", " x")]) == [-20.0]
    assert len(built) == 1


def test_a_reader_that_is_not_a_packaged_backbone_is_refused() -> None:
    from chronobench.systems.stores import StoreProvider

    with pytest.raises(ValueError, match="packaged backbone"):
        StoreProvider().reader_model("gpt-9")
