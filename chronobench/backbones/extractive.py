"""The extractive backbone: a deterministic reader with no language model.

It is the offline default and a real baseline row ("no LLM"). Heuristics:

QA (``task="qa"``)
  1. Split ``request.context`` passages into sentences; each keeps its line header
     (speaker / date prefix) and the first date found in its passage.
  2. Score a sentence by IDF-weighted coverage of the question's content terms
     (stemmed, stopwords removed): sum of idf of matched question terms / sum of idf of
     all question terms, with BM25's idf computed over the request's sentences. A term
     the context never mentions gets a high idf, so missing key words costs the most.
     The header counts for matching, so "Caroline: I went ..." matches "Caroline".
  3. Abstain (:data:`~chronobench.metrics.ABSTAIN_TEXT`) when the best coverage is
     below ``abstain_threshold`` or the context is empty.
  4. Rank by coverage plus ``type_bonus`` when the sentence holds what the question
     asks for (when -> a date or relative time; how many -> a number; who/where -> a
     capitalised name); ties go to the later sentence (the more recent memory).
  5. Answer with a short span from the winner: the date (relative phrases such as
     "yesterday" resolved against the passage date, else the passage date itself), the
     number, or the names not already in the question; for yes/no questions "Yes",
     or "No" when a word of the statement missing from the winning sentence occurs in
     memory only where its subject neither speaks nor is named (a fact given the
     wrong thing, as protocol 3's false recall statements are);
     otherwise the sentence without question words and stopwords, at most
     ``max_answer_words`` words. LoCoMo gold answers are short, so trimming words the
     gold cannot contain raises token F1.

Two-way choice (LoCoMo category 5: "... Select the correct answer: (a) X (b) Y."): pick
the option that is not an abstention only when the shown memory holds evidence for it:
a sentence that covers the question (coverage >= ``abstain_threshold``), names every
person the question names (in its text or speaker header) and contains at least half
of the option's content terms. Otherwise pick the "not mentioned" option. The reply is
the option's letter and text, e.g. "(b) Not mentioned in the conversation".

Summary (``task="summary"``): when the request states a word budget ("... in at most
150 words"), one specific sentence per passage date, spread over the timeline, until the
budget is full (:mod:`chronobench.backbones._summary`). Without a budget: split the
sentences into ``max_summary_sentences`` contiguous groups (so the summary covers the
whole timeline) and take from each group the sentence closest to the centroid of all
sentences (tf-idf cosine), in order. (Requests without a budget keep the old answer, so
cached calls stay valid.)

Paraphrase (``task="paraphrase"``): the question, unchanged.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from chronobench.backbones._index import (
    cosine_sim,
    covered_share,
    indexed_context,
    last_uncovered,
    term_idf,
    term_postings,
)
from chronobench.backbones._spans import (
    DATE_RE,
    NAME_RE,
    NUMBER_RE,
    RELATIVE_RE,
    Sentence,
    resolve_relative,
    split_sentences,
    terms,
    words,
)
from chronobench.backbones._summary import budget_summary
from chronobench.metrics.text import ABSTAIN_TEXT, is_abstention
from chronobench.protocols import Completion, GenerationRequest
from chronobench.text import READER_STOPWORDS, stem, word_budget

__all__ = ["ExtractiveBackbone"]

_YES_NO = re.compile(
    r"^\s*(is|are|was|were|do|does|did|would|will|can|could|has|have|had|should)\b", re.I
)
_WHEN = re.compile(
    r"^\s*when\b|\bwhat (date|year|month|day|time)\b|\bwhich (year|month|day)\b", re.I
)
_COUNT = re.compile(r"\bhow (many|much|old|long|often)\b|\bwhat number\b", re.I)
_WHO = re.compile(r"^\s*(who|whom|whose)\b|\bwhich person\b", re.I)
_CHOICE = re.compile(
    r"^(?P<q>.*?)\s*Select the correct answer:\s*\(a\)\s*(?P<a>.*?)\s*\(b\)\s*(?P<b>.*?)\.?\s*$",
    re.S,
)
_WHERE = re.compile(r"^\s*where\b|\bwhich (city|country|place|state)\b", re.I)


#: Words of a yes/no question that are no part of the statement it asks about.
_VERDICT_FILLER = frozenset({"true", "correct", "fact"})


def _question_type(question: str) -> str:
    for kind, regex in (("when", _WHEN), ("count", _COUNT), ("who", _WHO), ("where", _WHERE)):
        if regex.search(question):
            return kind
    return "yesno" if _YES_NO.search(question) else "other"


class ExtractiveBackbone:
    """Deterministic extractive reader (see the module docstring for its heuristics)."""

    name = "extractive"

    def __init__(
        self,
        abstain_threshold: float = 0.45,
        type_bonus: float = 0.15,
        max_answer_words: int = 12,
        max_summary_sentences: int = 8,
        model: str = "extractive-v1",
    ) -> None:
        if not 0.0 <= abstain_threshold <= 1.0:
            raise ValueError(f"abstain_threshold must be in [0, 1], got {abstain_threshold}")
        if max_answer_words < 1 or max_summary_sentences < 1:
            raise ValueError("max_answer_words and max_summary_sentences must be >= 1")
        self.abstain_threshold = abstain_threshold
        self.type_bonus = type_bonus
        self.max_answer_words = max_answer_words
        self.max_summary_sentences = max_summary_sentences
        # The heuristics' version: bump it when they change so caches do not serve stale answers.
        self.model = model

    @property
    def cache_config(self) -> dict[str, Any]:
        """Settings that change outputs; part of the cache key. ``code`` fingerprints the
        reader's source: the call cache keeps answers across runs, so without it an edit
        to the heuristics (and no bump of ``model``) would serve the old code's answers,
        and a run's samples would depend on what the cache held."""
        return {
            "abstain_threshold": self.abstain_threshold,
            "type_bonus": self.type_bonus,
            "max_answer_words": self.max_answer_words,
            "max_summary_sentences": self.max_summary_sentences,
            "code": code_fingerprint(),
        }

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Answer each request, in order (no tokens: the usage is left to the cache's
        estimate)."""
        return [Completion(self._one(r)) for r in requests]

    def _one(self, request: GenerationRequest) -> str:
        if request.task == "paraphrase":
            return request.question
        if request.task == "summary":
            budget = word_budget(request.question)
            if budget is not None:
                return budget_summary(request.context, budget)
            return self.summarise(request.context)
        if request.task == "qa":
            return self.answer(request.question, request.context)
        raise ValueError(
            f"extractive backbone: unknown task {request.task!r} (expected qa, summary, paraphrase)"
        )

    # ---- QA -------------------------------------------------------------------------

    def answer(self, question: str, context: tuple[str, ...]) -> str:
        """Best short span of ``context`` for ``question``, or the abstain text; for a
        two-way choice question, one of its options (see the module docstring)."""
        choice = _CHOICE.match(question)
        if choice:
            return self.choose(choice["q"], (choice["a"], choice["b"]), context)
        ctx = tuple(context)
        sentences, _, df = indexed_context(ctx)
        q_terms = set(terms(question))
        if not sentences or not q_terms:
            return ABSTAIN_TEXT
        idf, total = term_idf(q_terms, len(sentences), df)
        qtype = _question_type(question)
        typed = _typed(ctx, qtype)
        # The best (rank, coverage, index) over every sentence, later ones winning ties.
        # Only sentences holding a question term can cover it; each of the others ranks
        # as its type bonus alone (coverage 0.0), so of them only the last typed and the
        # last untyped one can be best (a full history has ~700 sentences per question).
        posting = term_postings(ctx)
        matched: dict[int, list[str]] = {}
        for t in q_terms:
            for i in posting.get(t, ()):
                matched.setdefault(i, []).append(t)
        # Many sentences cover the same terms (a speaker's name is in every header):
        # one exact sum per set of terms (fsum: the same value in any order).
        sums: dict[frozenset[str], float] = {}
        best: tuple[float, float, int] | None = None
        for i, found in matched.items():  # tuples differ in i: the max is order-free
            key = frozenset(found)
            coverage = sums.get(key)
            if coverage is None:
                coverage = sums[key] = covered_share(idf, key, total)
            rank = coverage + (self.type_bonus if typed[i] else 0.0)
            if best is None or (rank, coverage, i) > best:
                best = (rank, coverage, i)
        for i in last_uncovered(matched, typed):
            zero = (0.0 + (self.type_bonus if typed[i] else 0.0), 0.0, i)
            if best is None or zero > best:
                best = zero
        assert best is not None
        _, coverage, index = best
        if coverage < self.abstain_threshold:
            return ABSTAIN_TEXT
        if qtype == "yesno":
            return self._verdict(question, q_terms, index, ctx)
        return self._span(sentences[index], question, q_terms, qtype)

    def _verdict(self, question: str, q_terms: set[str], index: int, ctx: tuple[str, ...]) -> str:
        """Yes, unless a word of the statement that the best-matching sentence lacks
        occurs in the memory only in sentences that neither the statement's subject says
        nor name them: the statement then gives the subject something the memory says
        only of others, and the answer is No. Words the memory never uses (paraphrase,
        the question's own "true") decide nothing."""
        names = _names(question, set())
        if not names:
            return "Yes"
        subject = stem(names[0].split()[0].lower().replace("'", ""))
        _, sent_terms, _ = indexed_context(ctx)
        posting = term_postings(ctx)
        for t in q_terms - sent_terms[index]:
            holders = posting.get(t, ())
            if t in _VERDICT_FILLER or not holders:
                continue
            if all(subject not in sent_terms[i] for i in holders):
                return "No"
        return "Yes"

    def choose(self, question: str, options: tuple[str, str], context: tuple[str, ...]) -> str:
        """Pick one of two options: the non-abstaining one only with evidence in memory."""
        claims = [i for i, o in enumerate(options) if not is_abstention(o)]
        fallback = next((i for i in range(2) if i not in claims), None)
        pick = fallback
        if len(claims) == 1 and self._has_evidence(question, options[claims[0]], context):
            pick = claims[0]
        if pick is None:
            return ABSTAIN_TEXT  # both or neither option abstains: nothing to choose honestly
        return f"({'ab'[pick]}) {options[pick]}"

    def _has_evidence(self, question: str, option: str, context: tuple[str, ...]) -> bool:
        sentences, sent_terms, df = indexed_context(tuple(context))
        q_terms = set(terms(question))
        o_terms = set(terms(option))
        if not sentences or not q_terms or not o_terms:
            return False
        idf, total = term_idf(q_terms, len(sentences), df)
        people = [n.lower() for n in _names(question, set())]
        need = math.ceil(len(o_terms) / 2)
        for sent, ts in zip(sentences, sent_terms, strict=True):
            coverage = covered_share(idf, q_terms & ts, total)
            if coverage < self.abstain_threshold or len(o_terms & ts) < need:
                continue
            where = f"{sent.header} {sent.text}".lower()
            if all(p in where for p in people):
                return True
        return False

    @staticmethod
    def _has_type(sent: Sentence, qtype: str) -> bool:
        if qtype == "when":
            return bool(DATE_RE.search(sent.text) or RELATIVE_RE.search(sent.text))
        if qtype == "count":
            return bool(NUMBER_RE.search(sent.text))
        if qtype in ("who", "where"):
            return bool(_names(sent.text, set()))
        return False

    def _span(self, sent: Sentence, question: str, q_terms: set[str], qtype: str) -> str:
        text = sent.text
        if qtype == "when":
            m = DATE_RE.search(text)
            if m:
                return m.group(0)
            rel = RELATIVE_RE.search(text)
            if rel and sent.passage_date:
                return resolve_relative(rel.group(0), sent.passage_date)
            if sent.passage_date_text:
                return sent.passage_date_text
        elif qtype == "count":
            q_words = {w.lower() for w in words(question)}
            for m in NUMBER_RE.finditer(text):
                if m.group(0).lower() not in q_words:
                    return m.group(0)
        elif qtype in ("who", "where"):
            found = _names(text, q_terms)
            if found:
                return ", ".join(found)
        return self._trim(text, q_terms)

    def _trim(self, text: str, q_terms: set[str]) -> str:
        kept = [
            w
            for w in words(text)
            if w.lower().replace("'", "") not in READER_STOPWORDS and stem(w.lower()) not in q_terms
        ]
        return " ".join(kept[: self.max_answer_words]) if kept else text

    # ---- Summary --------------------------------------------------------------------

    def summarise(self, context: tuple[str, ...]) -> str:
        """Up to ``max_summary_sentences`` central sentences spread over the context."""
        sentences = [s for s in split_sentences(context) if len(terms(s.text)) >= 3]
        if not sentences:
            return ABSTAIN_TEXT
        vectors = [Counter(terms(s.text)) for s in sentences]
        df = Counter(t for v in vectors for t in v)
        n = len(sentences)
        weighted = [{t: c * math.log(1 + n / df[t]) for t, c in v.items()} for v in vectors]
        centroid: Counter[str] = Counter()
        for w in weighted:
            centroid.update(w)
        k = min(self.max_summary_sentences, n)
        # The centroid's norm is shared by every comparison: compute it once.
        c_norm = math.sqrt(sum(v * v for v in centroid.values()))
        sims = [cosine_sim(w, centroid, c_norm) for w in weighted]
        chosen: list[int] = []
        for g in range(k):
            lo, hi = g * n // k, (g + 1) * n // k
            chosen.append(max(range(lo, hi), key=lambda i: (sims[i], -i)))
        return " ".join(sentences[i].text for i in chosen)


#: Modules whose source decides the reader's answers (see ExtractiveBackbone.cache_config).
_CODE_MODULES = (
    "chronobench.backbones.extractive",
    "chronobench.backbones._index",
    "chronobench.backbones._spans",
    "chronobench.backbones._summary",
    "chronobench.text",
    "chronobench.metrics.text",
)


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Short sha256 of the source of :data:`_CODE_MODULES` (the reader's code version)."""
    import hashlib
    import importlib
    from pathlib import Path

    digest = hashlib.sha256()
    for name in _CODE_MODULES:
        file = getattr(importlib.import_module(name), "__file__", None)
        digest.update(name.encode())
        if file:
            digest.update(Path(file).read_bytes())
    return digest.hexdigest()[:16]


@lru_cache(maxsize=64)
def _typed(context: tuple[str, ...], qtype: str) -> tuple[bool, ...]:
    """Whether each sentence of the context holds what a ``qtype`` question asks for."""
    return tuple(ExtractiveBackbone._has_type(s, qtype) for s in indexed_context(context)[0])


def _names(text: str, q_terms: set[str]) -> list[str]:
    """Capitalised word runs not starting the sentence with a stopword, minus question
    words ("I", "The" and the asker's own names are not answers)."""
    out: list[str] = []
    for m in NAME_RE.finditer(text):
        parts = [p for p in m.group(0).split() if p.lower() not in READER_STOPWORDS]
        parts = [p for p in parts if stem(p.lower().replace("'", "")) not in q_terms]
        if parts:
            name = " ".join(parts)
            if name not in out:
                out.append(name)
    return out
