"""Annotation uniqueness filter: anchors are judged by the dataset's annotations only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from data_builders.queries import Anchor
from data_builders.uniqueness import (
    AnnotationIndex,
    annotation_verdict,
    filter_by_annotations,
    fold,
    key_terms,
)

# Four sessions' annotation records (event summaries, observations, QA questions).
RECORDS = {
    "s1": ["Ann marches in the pride parade downtown.", "Ann went camping with her family."],
    "s2": ["Ann went to another pride parade with friends.", "Bob bakes bread."],
    "s3": ["Bob adopts a puppy from the shelter.", "What did Bob name his puppy?"],
    "s4": ["Ann starts pottery classes.", "Ann camped at the lake with her family."],
}


def _index() -> AnnotationIndex:
    index = AnnotationIndex()
    for key, texts in RECORDS.items():
        for text in texts:
            index.add([key], text)
    index.weigh(index.records)
    return index


def _anchor(aid: str, phrase: str, group: str, text: str | None = None) -> Anchor:
    return Anchor(
        anchor_id=aid,
        kind="event",
        text=text or phrase,
        phrase=phrase,
        form="clause",
        scope="session",
        group=group,
        anchor_version=1,
        restore_version=1,
        undo_version=0,
    )


def test_anchor_whose_topic_other_sessions_annotate_is_dropped() -> None:
    anchors = [
        _anchor("parade", "Ann marches in the pride parade", "s1"),  # s2: another parade
        _anchor("camping", "Ann goes camping with her family", "s1"),  # s4 camped too
        _anchor("puppy", "Bob adopts a puppy from the shelter", "s3"),
        _anchor("pottery", "Ann starts pottery classes", "s4"),
        _anchor("names", "Ann and Bob", "s4"),  # nothing rare enough: too generic
        _anchor("quoted", "Bob bakes bread", "s2", text="Bob: I bake bread"),
    ]
    kept, drops = filter_by_annotations(
        anchors,
        {"session": (_index(), lambda a: {a.group})},
        indexed_text="[1 May] Bob: I bake bread every day",
    )
    assert [a.anchor_id for a in kept] == ["puppy", "pottery"]
    assert drops == {
        "event:annotation_recurs": 2,
        "event:annotation_too_generic": 1,
        "event:verbatim_in_index": 1,
    }


def test_rare_terms_weigh_more_than_common_ones() -> None:
    index = _index()
    # "ann" is in three of four sessions, "pottery" in one: log(4/3) vs log(4).
    assert index.weights["ann"] < index.weights["pottery"]
    total, share = index.rival_share(key_terms("Ann starts pottery classes"), {"s4"})
    assert total > 1.0 and share < 0.4


def test_folding_meets_inflections() -> None:
    assert {fold("camping"), fold("camped"), fold("camps"), fold("camp")} == {"camp"}
    assert fold("puppies") == "puppy" and fold("class") == "class"


def test_verdict_and_bad_parameters() -> None:
    assert annotation_verdict(2.0, 0.39, max_share=0.4, min_weight=1.0) is None
    assert annotation_verdict(2.0, 0.4, max_share=0.4, min_weight=1.0) == "annotation_recurs"
    assert annotation_verdict(0.5, 0.0, max_share=0.4, min_weight=1.0) == "annotation_too_generic"
    with pytest.raises(ValueError, match="annotation share"):
        filter_by_annotations([], {}, share=1.5)
    with pytest.raises(ValueError, match="min_weight"):
        filter_by_annotations([], {}, min_weight=-1)


def test_filter_shares_nothing_with_a_selector() -> None:
    """Issue 15 item 4: no search index, BM25, embedding or selector code in the filter."""
    root = Path(__file__).resolve().parents[1]
    for rel in ("data_builders/uniqueness.py", "data_builders/locomo/anchors.py"):
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
        mods = {
            n.module if isinstance(n, ast.ImportFrom) else a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in (n.names if isinstance(n, ast.Import) else [n])
        }
        banned = ("sqlite3", "chronomem", "chronobench.selectors", "rank_bm25", "torch")
        assert not [m for m in mods if m and m.startswith(banned)], (rel, mods)
