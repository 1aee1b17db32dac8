"""RQ1 selectors: retrieval stages alone, and each stage + the request rules."""

from __future__ import annotations

import pytest

from chronobench.data.schema import MemoryOp, Stream, Write
from chronobench.protocols import StreamWrite, public_writes
from chronobench.selectors import SELECTORS, StoreSelector, selector_names
from chronobench.systems.stores import StoreProvider
from chronomem import HashEmbedder

TEXTS = [
    "Ann: I adopted a puppy called Rex from the shelter",
    "Ann: started pottery classes on Tuesdays",
    "Ann: we moved to Lisbon for my new job",
    "Ann: ran my first half marathon by the river",
]


@pytest.fixture(scope="module")
def setup() -> tuple[tuple[StreamWrite, ...], StoreProvider]:
    writes = [
        Write(version=j, ops=[MemoryOp(op="add", item_id=f"m{j}", text=t)], labels={"session": j})
        for j, t in enumerate(TEXTS, start=1)
    ]
    stream = Stream(
        stream_id="t/s", dataset="t", granularity="session", sample_id="s", writes=writes
    )
    provider = StoreProvider(embedder=HashEmbedder())
    yield public_writes(stream), provider
    provider.close()


def _top(setup: tuple[tuple[StreamWrite, ...], StoreProvider], name: str, text: str) -> int:
    stream, provider = setup
    ranked = StoreSelector(name, provider).search(stream, {"q": text}, top_k=5)["q"]
    return ranked[0][0]


def test_every_selector_is_registered_with_a_label_and_an_order() -> None:
    assert set(selector_names()) <= set(SELECTORS.names())
    assert {"bm25_rules", "dense_rules"} <= set(selector_names())
    for name in selector_names():
        entry = SELECTORS.entry(name)
        assert entry.label and entry.label != name and entry.order is not None
    # Table order: single stages first, ChronoMem (the full pipeline) last, then ChronoMem
    # with its optional meaning stage, and that stage with its reader.
    assert SELECTORS.ordered(selector_names())[0] == "bm25"
    assert SELECTORS.ordered(selector_names())[-3:] == [
        "chronomem",
        "chronomem_meaning",
        "chronomem_reader",
    ]


def test_rules_apply_intent_on_top_of_a_stage(
    setup: tuple[tuple[StreamWrite, ...], StoreProvider],
) -> None:
    undo = "Forget everything since the conversation where Ann started pottery classes"
    restore = "Go back to right after the conversation where Ann started pottery classes"
    assert _top(setup, "bm25", undo) == 2  # retrieval alone finds the described commit
    assert _top(setup, "bm25_rules", undo) == 1  # undo: the version before it
    assert _top(setup, "bm25_rules", restore) == 2
    assert _top(setup, "chronomem_norerank", undo) == 1
    # Whatever the dense stage finds, the rules shift an undo to its parent.
    stream, provider = setup
    found = StoreSelector("dense", provider).search(stream, {"q": "pottery classes"}, 5)["q"]
    assert _top(setup, "dense_rules", undo) == found[0][0] - 1


def test_chronomem_refuses_what_its_gate_refuses_and_says_why(
    setup: tuple[tuple[StreamWrite, ...], StoreProvider],
) -> None:
    """The full pipeline ranks nothing for a request its rollback plan refuses (one that
    names no content); the ablation rows still rank, and a request that names content
    is ranked as before."""
    from chronobench.protocols import RefusingSelector

    stream, provider = setup
    requests = {"empty": "hi, undo what I said earlier", "named": "undo the pottery classes"}
    gated = StoreSelector("chronomem", provider)
    got = gated.search(stream, requests, top_k=5)
    assert isinstance(gated, RefusingSelector)
    assert got["empty"] == [] and "names no content" in gated.refusals["empty"]
    assert got["named"][0][0] == 1 and "named" not in gated.refusals
    ablation = StoreSelector("chronomem_norerank", provider)
    assert ablation.search(stream, requests, top_k=5)["empty"] and not ablation.refusals


def test_unknown_selector_is_refused(setup: tuple[tuple[StreamWrite, ...], StoreProvider]) -> None:
    with pytest.raises(KeyError, match="unknown selector"):
        StoreSelector("bm25_plus", setup[1])


def test_the_plugin_docs_selector_runs_on_the_interface_the_runner_passes(
    setup: tuple[tuple[StreamWrite, ...], StoreProvider],
) -> None:
    """docs/plugins.md's selector section: its example, run as the runner runs a selector
    (a tuple of StreamWrite, opaque request ids, the run's StoreProvider)."""
    import inspect
    import re

    from chronobench.protocols import Selector
    from tests.conftest import REPO_ROOT

    doc = (REPO_ROOT / "docs" / "plugins.md").read_text()
    section = doc.split("## Selectors and backbones\n", 1)[1].split("\n## ", 1)[0]
    assert "search(writes, queries, top_k)" in section
    params = list(inspect.signature(Selector.search).parameters)[1:]
    assert params == ["writes", "queries", "top_k"]  # the names the section uses
    (code,) = re.findall(r"```python\n(.*?)```\n", section, re.S)
    namespace: dict = {}
    exec(compile(code, "docs/plugins.md", "exec"), namespace)  # noqa: S102 - our own docs
    writes, provider = setup
    selector = namespace["LateBM25Selector"]("late_bm25", provider)
    assert isinstance(selector, Selector)
    ranked = selector.search(writes, {"r1": "pottery classes", "r2": "marathon"}, top_k=3)
    assert ranked["r1"][0][0] == 2 and ranked["r2"][0][0] == 4
    assert all(isinstance(j, int) and 0 <= j <= len(writes) for j, _ in ranked["r1"])
