"""RQ3 scores: ROUGE-1 (rouge-score, Porter stemmer), content ROUGE-1, calibrated
summary leakage and session coverage (docs/metrics.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from chronobench.metrics.content import content_stems, content_text, content_words
from chronobench.text import stem

__all__ = [
    "LEAK_FRACTION",
    "LEAK_GATE",
    "MIN_NOVEL_WORDS",
    "SUMMARY_WORDS",
    "content_rouge1",
    "last_session_words",
    "session_coverage",
    "session_new_words",
    "specific_rouge1",
    "novel_event_words",
    "rouge1",
    "summary_leakage",
]

#: An eligible post-v* event leaks when at least this share of its novel words appears.
LEAK_FRACTION = 0.5
#: An event needs this many novel content stems to be eligible (one word is too weak
#: a signal: it may appear in any summary by chance).
MIN_NOVEL_WORDS = 2
#: The word budget of a LoCoMo summary probe: the question states it and every RQ3
#: score reads only the prediction's first this-many words (docs/metrics.md).
SUMMARY_WORDS = 150
#: The RQ3 headline is 0 for a summary whose calibrated leakage is above this.
LEAK_GATE = 0.0


@lru_cache(maxsize=1)
def _scorer() -> Any:
    # Built once: the scorer object is stateless and costs a little to construct.
    from nltk.stem import porter
    from rouge_score import rouge_scorer, tokenize, tokenizers

    class MemoStemmer:
        """rouge-score's Porter stemmer (nltk's, as with use_stemmer=True), memoised:
        the same references are stemmed for every probe of every cell, and stemming
        was ~70% of the main job's scoring time."""

        def __init__(self) -> None:
            self.stem = lru_cache(maxsize=262_144)(porter.PorterStemmer().stem)

    class StemmingTokenizer(tokenizers.Tokenizer):
        def __init__(self) -> None:
            stemmer = MemoStemmer()
            # Token lists memoised too (the scorer only reads them): each reference is
            # scored once per cell and per variant (ROUGE-1, content, specific).
            self._tokens = lru_cache(maxsize=16_384)(lambda text: tokenize.tokenize(text, stemmer))

        def tokenize(self, text: str) -> list[str]:
            return self._tokens(text)

    return rouge_scorer.RougeScorer(["rouge1"], tokenizer=StemmingTokenizer())


def rouge1(prediction: str, reference: str) -> float:
    """ROUGE-1 F-measure of ``prediction`` against ``reference``, in [0, 1]."""
    return float(_scorer().score(reference, prediction)["rouge1"].fmeasure)


def content_rouge1(prediction: str, reference: str, names: Iterable[str] = ()) -> float:
    """ROUGE-1 F-measure after removing stopwords, ``names``, dates and numbers from both
    sides (:func:`~chronobench.metrics.content.content_text`); 0.0 when either side has
    no content word left."""
    names = tuple(names)
    pred = content_text(prediction, names)
    ref = content_text(reference, names)
    if not pred or not ref:
        return 0.0
    return rouge1(pred, ref)


def specific_rouge1(
    prediction: str, reference: str, generic: Iterable[str], names: Iterable[str] = ()
) -> float:
    """Content ROUGE-1 (:func:`content_rouge1`) without the words whose stem is in
    ``generic`` (summary vocabulary common to most conversations): what is left is what
    only this conversation's summary says."""
    names, drop = tuple(names), set(generic)
    pred = " ".join(w for w in content_words(prediction, names) if stem(w) not in drop)
    ref = " ".join(w for w in content_words(reference, names) if stem(w) not in drop)
    if not pred or not ref:
        return 0.0
    return rouge1(pred, ref)


def novel_event_words(
    events: Sequence[str], known_text: str, names: Iterable[str] = ()
) -> list[list[str]]:
    """For each post-v* event, its content stems that occur nowhere in ``known_text``
    (the memory committed up to v* plus the v* reference), sorted; events with fewer
    than :data:`MIN_NOVEL_WORDS` novel stems are left out (not eligible)."""
    names = tuple(names)
    known = content_stems(known_text, names)
    out: list[list[str]] = []
    for event in events:
        novel = sorted(content_stems(event, names) - known)
        if len(novel) >= MIN_NOVEL_WORDS:
            out.append(novel)
    return out


def summary_leakage(
    prediction: str, novel_words: Sequence[Sequence[str]], names: Iterable[str] = ()
) -> float | None:
    """Share of eligible post-v* events whose novel stems (from
    :func:`novel_event_words`) appear at least :data:`LEAK_FRACTION` in the prediction.
    ``None`` when no event is eligible (nothing can leak, so no score)."""
    eligible = [ws for ws in novel_words if len(ws) >= MIN_NOVEL_WORDS]
    if not eligible:
        return None
    said = content_stems(prediction, tuple(names))
    leaked = sum(sum(w in said for w in ws) >= LEAK_FRACTION * len(ws) for ws in eligible)
    return leaked / len(eligible)


def session_new_words(
    session_events: Sequence[tuple[int, Sequence[str]]],
    session_memory: Sequence[tuple[int, str]],
    names: Iterable[str] = (),
) -> dict[int, list[str]]:
    """Per session, the content stems of its annotated events that the conversation says
    for the first time in that session (sorted; sessions with none are left out).

    ``session_events``: ``(session, events)``; ``session_memory``: ``(session, text)`` of
    what the memory holds, in stream order (a session may come in several pieces). A
    stem belongs to the first session whose memory text holds it; event words the memory
    never holds (paraphrase) belong to no session. Verbatim text of one session can only
    cover that session's words, which is what :func:`session_coverage` relies on."""
    names = tuple(names)
    first: dict[str, int] = {}
    for session, text in session_memory:
        for st in content_stems(text, names):
            first.setdefault(st, session)
    out: dict[int, list[str]] = {}
    for session, events in session_events:
        new = sorted(
            st for st in content_stems(" ".join(events), names) if first.get(st) == session
        )
        if new:
            out[session] = new
    return out


def session_coverage(
    prediction: str, session_words: Sequence[Sequence[str]], names: Iterable[str] = ()
) -> float | None:
    """Mean over the restored sessions of the share of their new reference words
    (:func:`session_new_words`) found among the prediction's content stems. ``None``
    when no session has such words. The caller cuts the prediction to the word budget
    and applies the leakage gate (:func:`~chronobench.metrics.score_probe`)."""
    sessions = [set(ws) for ws in session_words if ws]
    if not sessions:
        return None
    said = content_stems(prediction, tuple(names))
    return sum(len(ws & said) / len(ws) for ws in sessions) / len(sessions)


def last_session_words(
    new_words: Iterable[str], request: str, names: Iterable[str] = ()
) -> list[str]:
    """The newest restored session's new words (:func:`session_new_words`) that the
    rollback request does not state, sorted: what the RQ3 headline counts.

    Every query restores the early sessions, so covering them says nothing about the
    rollback; the newest restored session is what only the right version holds. Words
    the request states are left out because a reply can copy them from the request
    without restoring anything (template requests describe that session's events)."""
    stated = content_stems(request, tuple(names)) if request else set()
    return sorted({w for w in new_words if w not in stated})
