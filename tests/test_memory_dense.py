"""Dense resolution, hybrid fusion and rerankers with the packaged MiniLM."""

from __future__ import annotations

import numpy as np
import pytest

from chronomem import ChronoMem, CrossEncoderReranker, DeltaReranker, Reranker
from tests._memory_fixtures import APP, USER, add, facts_store


@pytest.fixture(scope="module")
def story(minilm) -> ChronoMem:
    mem, _ = facts_store(minilm)
    return mem


def test_dense_matches_paraphrase(story: ChronoMem) -> None:
    # No word in common with "Ann adopted a beagle puppy called Rex".
    assert story.resolve_dense(APP, USER, "getting a new dog", 1)[0][0] == 5
    assert story.resolve_dense(APP, USER, "relocating to another country", 2)[0][0] in (1, 4)
    assert story.resolve_lexical(APP, USER, "getting a new dog", 5) == []


def test_hybrid_and_resolve_with_minilm(story: ChronoMem) -> None:
    assert story.resolve_hybrid(APP, USER, "her job at the hospital", 1)[0][0] == 2
    assert story.resolve(APP, USER, "undo the part about the dog")[0][0] == 4
    assert story.resolve(APP, USER, "go back to when she got the puppy")[0][0] == 5


def test_dense_cache_invalidates_on_change(minilm) -> None:
    mem, _ = facts_store(minilm)
    assert mem.resolve_dense(APP, USER, "getting a new dog", 1)[0][0] == 5
    mem.rollback_to_version(APP, USER, 4)
    assert all(v <= 4 for v, _ in mem.resolve_dense(APP, USER, "getting a new dog", 10))
    mem.commit(APP, USER, [add("cat", "Ann brought home a kitten")], source="s", reason="r")
    assert mem.resolve_dense(APP, USER, "a new cat", 1)[0][0] == 6
    assert mem.check_integrity(APP, USER) == []


class _ReverseReranker:
    """A fake reranker that inverts the fused order (tests the plumbing)."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, str, float]] = []

    def rerank(
        self, query: str, candidates: list[tuple[int, str, float]]
    ) -> list[tuple[int, float]]:
        self.seen = candidates
        return [(v, float(i)) for i, (v, _, _) in enumerate(candidates)][::-1]


def test_reranker_plumbing_with_fake(minilm) -> None:
    fake = _ReverseReranker()
    assert isinstance(fake, Reranker)
    mem, _ = facts_store(minilm)
    plain = mem.resolve(APP, USER, "Lisbon", 3, intent="restore_to")
    mem.reranker = fake
    reranked = mem.resolve(APP, USER, "Lisbon", 3, intent="restore_to")
    assert fake.seen and all(isinstance(d, str) and d for _, d, _ in fake.seen)
    assert reranked[0][0] == fake.seen[-1][0] and reranked != plain


def test_delta_reranker_prefers_the_specific_item(minilm) -> None:
    mem = ChronoMem(":memory:", embedder=minilm, reranker=DeltaReranker())
    mem.commit(
        APP,
        USER,
        [
            add("a", "We talked about football, the weather, Tokyo food and taxes"),
            add("b", "Ann mentioned her sister Mia plays the violin"),
        ],
        source="s",
        reason="r",
    )
    for i in range(6):
        mem.commit(
            APP,
            USER,
            [add(f"m{i}", f"Ann talked about music and concerts, part {i}")],
            source="s",
            reason="r",
        )
    top = mem.resolve(APP, USER, "the bit about Mia's violin", 1, intent="restore_to")
    assert top[0][0] == 1
    assert mem.reranker.embedder is mem.embedder  # store injected its embedder


def test_cross_encoder_missing_model_is_a_clear_error() -> None:
    rr = CrossEncoderReranker("/nonexistent/cross-encoder-model")
    with pytest.raises(RuntimeError, match="could not load cross-encoder"):
        rr.rerank("q", [(1, "d", 0.1)])
    with pytest.raises(ValueError):
        CrossEncoderReranker("")


def test_minilm_vectors_are_normalised(minilm) -> None:
    vecs = minilm.encode(["a", "b c"])
    assert vecs.dtype == np.float32 and np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
