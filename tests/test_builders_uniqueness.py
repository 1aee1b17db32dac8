"""Episode uniqueness filter: anchors are checked against every episode's indexed text."""

from __future__ import annotations

import pytest

from data_builders.queries import Anchor
from data_builders.uniqueness import Episode, EpisodeIndex, episode_verdict, filter_by_episodes

EPISODES = [
    Episode("s1", "Ann: we went to the pride parade downtown. Bob: the parade looked fun!"),
    Episode("s2", "Ann: another parade this weekend, the pride parade again."),
    Episode("s3", "Bob: I adopted a puppy from the shelter. Ann: a puppy, how lovely."),
    Episode("s4", "Ann: I started pottery classes. Bob: pottery sounds relaxing."),
]


def _anchor(aid: str, phrase: str, group: str) -> Anchor:
    return Anchor(
        anchor_id=aid,
        kind="event",
        text=phrase,
        phrase=phrase,
        form="clause",
        scope="session",
        group=group,
        anchor_version=1,
        restore_version=1,
        undo_version=0,
    )


def test_anchor_that_recurs_in_other_episodes_is_dropped() -> None:
    index = EpisodeIndex(EPISODES)
    anchors = [
        _anchor("parade", "Ann marches in the pride parade", "s1"),  # s2 talks parades too
        _anchor("puppy", "Bob adopts a puppy from the shelter", "s3"),
        _anchor("pottery", "Bob adopts a puppy", "s4"),  # its own episode does not match
        _anchor("nothing", "Zed flies kites", "s4"),  # no lexical evidence anywhere: kept
    ]
    kept, drops, no_lexical = filter_by_episodes(
        anchors, {"session": (index, lambda a: a.group)}, margin=0.8
    )
    assert [a.anchor_id for a in kept] == ["puppy", "nothing"]
    assert sum(drops.values()) == 2 and drops["event:episode_not_top"] >= 1
    assert no_lexical == 1
    index.close()


def test_porter_stemming_matches_inflections() -> None:
    index = EpisodeIndex(EPISODES)
    assert set(index.scores("adopting puppies")) == {"s3"}
    index.close()


def test_verdict_margin() -> None:
    assert episode_verdict({"a": 10.0, "b": 7.9}, "a", 0.8) is None
    assert episode_verdict({"a": 10.0, "b": 8.0}, "a", 0.8) == "runner_up_close"
    assert episode_verdict({"a": 10.0, "b": 11.0}, "a", 0.8) == "not_top"
    assert episode_verdict({"b": 1.0}, "a", 0.8) == "not_top"
    assert episode_verdict({}, "a", 0.8) is None


def test_bad_margin_is_refused() -> None:
    with pytest.raises(ValueError, match="episode margin"):
        filter_by_episodes([], {}, margin=1.5)
