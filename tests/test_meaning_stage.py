"""ChronoMem's meaning stage: a second reading of requests the rules read weakly.

A small concept embedder (words that mean the same thing share a dimension) stands in
for the sentence model, so what is tested is the stage's gate, its reading of the
request and its decision, on a real SQLite store with the real parser, retrieval and
reranker. The packaged MiniLM test below checks the stage with a real model.
"""

from __future__ import annotations

import numpy as np
import pytest

from chronomem import ChronoMem
from chronomem.meaning import MeaningStage, meaning_stage, reading, speakers, support

APP, USER = "app", "u"
DATE = "[1:00 pm on {d} May, 2023]"
SESSIONS = [
    ["Caroline: I went to the pottery class again, my bowl cracked in the kiln.",
     "Melanie: Oh no! Will you try again?"],
    ["Caroline: Went biking with my friends along the river trail this weekend.",
     "Melanie: That sounds lovely, how far did you ride?"],
    ["Caroline: My cousin's wedding was beautiful, everyone danced all night.",
     "Melanie: I love weddings! Congratulations to them."],
    ["Caroline: I started a new job at the library downtown.",
     "Melanie: A library job suits you so well."],
]  # fmt: skip

CONCEPTS = {
    "cycling": "biking bike bikes bicycle cycling ride rode riding two-wheeled pedal",
    "wedding": "wedding weddings married hitched marry spouse knot",
    "pottery": "pottery bowl kiln clay ceramics",
    "work": "job work library employed hired",
    "friends": "friends pals crew buddies",
    "river": "river trail",
}


class ConceptEmbedder:
    """Words of one concept share a dimension; every other word a hashed dimension of its
    own (a weak, word-level signal, as a sentence model's for unrelated words)."""

    on_grid = False
    model_name = None

    def encode(self, texts: list[str]) -> np.ndarray:
        index = {w: i for i, words in enumerate(CONCEPTS.values()) for w in words.split()}
        rows = np.zeros((len(texts), 64), dtype=np.float64)
        for r, text in enumerate(texts):
            for raw in text.lower().split():
                w = raw.strip(".,!?'\":;()[]")
                if w in index:
                    rows[r, index[w]] += 1.0
                elif w:
                    rows[r, 8 + sum(map(ord, w)) % 56] += 0.05
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (rows / norms).astype(np.float32)


def _store(meaning: object, app: str = APP) -> tuple[ChronoMem, list[int]]:
    """One commit per chat, a line an item, as the benchmark writes LoCoMo sessions."""
    mem = ChronoMem(embedder="hash", meaning=meaning)
    vids = []
    for n, lines in enumerate(SESSIONS, start=1):
        ops = [
            {"op": "add", "item_id": f"s{n}-{i}", "text": f"{DATE.format(d=n)} {line}"}
            for i, line in enumerate(lines)
        ]
        vids.append(
            mem.commit(app, USER, ops, source="chat", reason="session", labels={"session": n})
        )
    return mem, vids


@pytest.fixture(scope="module")
def stage() -> MeaningStage:
    return MeaningStage(ConceptEmbedder())


def _event(mem: ChronoMem, request: str) -> int:
    """The commit the request describes (restore_to: its own version)."""
    return mem.resolve(APP, USER, request, k=3, intent="restore_to")[0][0]


def test_a_paraphrase_the_rules_miss_is_read_by_meaning(stage: MeaningStage) -> None:
    request = "go back to when Caroline's crew went pedalling downtown"
    plain, vids = _store(None)
    read, _ = _store(stage)
    assert _event(plain, request) == vids[3]  # "downtown" is the only word the memory holds
    assert _event(read, request) == vids[1]


def test_a_pick_the_rules_rank_clearly_first_stands(stage: MeaningStage) -> None:
    from dataclasses import replace

    read, vids = _store(replace(stage, rules_lead=0.0))  # every lead is clear
    assert _event(read, "go back to when Caroline's crew went pedalling downtown") == vids[3]


def test_a_request_in_the_memorys_words_keeps_the_rules_pick(stage: MeaningStage) -> None:
    mem, vids = _store(stage)
    assert _event(mem, "restore to the pottery class where the bowl cracked in the kiln") == vids[0]


@pytest.mark.parametrize(
    "request_text",
    [
        "not the pottery one, restore to when Caroline's crew went pedalling downtown",
        "go back to the second time Caroline's crew went pedalling downtown",
        "go back to the chat in May where Caroline's crew went pedalling downtown",
    ],
)
def test_a_request_with_structure_is_left_to_the_rules(
    stage: MeaningStage, request_text: str
) -> None:
    plain, _ = _store(None)
    read, _ = _store(stage)
    assert read.resolve(APP, USER, request_text, k=3) == plain.resolve(APP, USER, request_text, k=3)


@pytest.mark.parametrize(("side", "chat"), [("after", 2), ("before", 0)])
def test_an_offset_starts_from_the_event_read_by_meaning(
    stage: MeaningStage, side: str, chat: int
) -> None:
    request = (
        f"go back to the chat right {side} the one where Caroline's crew went pedalling downtown"
    )
    read, vids = _store(stage)
    assert read.resolve(APP, USER, request, k=3)[0][0] == vids[chat]  # the biking chat's neighbour


def test_the_plan_shows_the_reading(stage: MeaningStage) -> None:
    mem, vids = _store(stage)
    plan = mem.plan_rollback_by_nl_query(
        APP, USER, "go back to when Caroline's crew went pedalling downtown, keep that chat"
    )
    step = plan.evidence["steps"]["meaning"]
    assert step["moved"] and step["commit"] == vids[1] == plan.matched_version
    assert "caroline" not in step["read"].lower()  # the speaker's name is not read


def test_speakers_are_the_names_that_open_lines() -> None:
    lines = ["[1 May] Caroline: hi", "Melanie: hello", "no speaker here", "[x] lower: no"]
    assert speakers(lines) == {"caroline", "melanie"}
    assert reading("when Caroline's pals rode bikes, thanks so much!", {"caroline"}) == (
        "when pals rode bikes"
    )


def test_support_is_the_share_of_clause_words_held() -> None:
    assert support(["pottery", "bowl", "cracked"], "the bowl cracked in the kiln") == pytest.approx(
        2 / 3
    )
    assert support([], "anything") == 0.0


def test_bad_settings_are_refused() -> None:
    assert meaning_stage(None) is None
    with pytest.raises(ValueError, match="words, not meanings"):
        meaning_stage("hash")
    with pytest.raises(TypeError, match="encode"):
        MeaningStage(object())
    with pytest.raises(ValueError, match="support"):
        MeaningStage(ConceptEmbedder(), support=1.5)
    with pytest.raises(ValueError, match="rules_lead"):
        MeaningStage(ConceptEmbedder(), rules_lead=-0.1)


@pytest.mark.slow
def test_minilm_reads_a_wedding_said_in_other_words() -> None:
    pytest.importorskip("sentence_transformers")
    plain, vids = _store(None)
    read, _ = _store("minilm")
    request = "roll back to right after Caroline's relative tied the knot"
    assert _event(read, request) == vids[2]
    assert _event(plain, request) in vids


def test_a_run_names_the_meaning_stage_only_when_it_has_one() -> None:
    from chronobench.audit.data import compose_spec
    from chronobench.runner.components import store_retrieval_options

    plain = compose_spec(["dataset=locomo_session", "task=selection"])
    read = compose_spec(["dataset=locomo_session", "task=selection", "+retriever.meaning=mpnet"])
    assert "meaning" not in plain.identity()["retriever"]  # published run ids unchanged
    assert "meaning" not in plain.recorded()["retriever"]
    assert "meaning" not in store_retrieval_options(plain.retriever)
    assert read.identity()["retriever"]["meaning"] == "mpnet"
    assert store_retrieval_options(read.retriever)["meaning"] == "mpnet"


def test_the_stage_never_makes_a_refused_request_act(
    stage: MeaningStage, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronomem import UncertainRequestError
    from chronomem import meaning as mn

    plain, _ = _store(None)
    read, vids = _store(stage)
    request = "forget what I said about the climbing gym membership downtown"
    with pytest.raises(UncertainRequestError) as rules:
        plain.plan_rollback_by_nl_query(APP, USER, request)

    def always(p, ranked, stage, descriptors, pool):  # a stage that always moves
        return [(vids[3], 9.0), *ranked], {"moved": True, "commit": vids[3]}

    monkeypatch.setattr(mn, "repick", always)
    with pytest.raises(UncertainRequestError) as staged:
        read.plan_rollback_by_nl_query(APP, USER, request)
    assert str(staged.value) == str(rules.value)


def test_the_meaning_selector_lends_the_stage_to_the_shared_store(stage: MeaningStage) -> None:
    from types import SimpleNamespace

    from chronobench.selectors import StoreSelector
    from chronobench.systems.base import APP as BENCH_APP

    mem, vids = _store(None, BENCH_APP)
    ingested = SimpleNamespace(store=mem, user=USER, j_of={v: j for j, v in enumerate(vids, 1)})
    asked: list[str] = []

    class Stores:  # a StoreProvider's two calls the selector makes
        def get(self, writes: object) -> SimpleNamespace:
            return ingested

        def meaning_stage(self, model: str) -> MeaningStage:
            asked.append(model)
            return stage

    request = {"q": "go back to when Caroline's crew went pedalling downtown"}
    read = StoreSelector("chronomem_meaning", Stores()).search([], request, top_k=3)
    rules = StoreSelector("chronomem", Stores()).search([], request, top_k=3)
    assert asked == ["mpnet"]
    # restore_to the biking chat (write 2); the rules alone pick the library chat (write 4).
    assert read["q"][0][0] == 2 and rules["q"][0][0] == 4
    assert mem.meaning is None  # given back: the cell's other selectors read without it
