"""Rerankers over the fused top-K candidates of :meth:`ChronoMem.resolve`.

- :class:`CrossEncoderReranker`: any sentence-transformers CrossEncoder (hub name
  or local path), loaded lazily.
- :class:`DeltaReranker`: offline, no extra model. Hybrid fusion scores a commit
  by its whole descriptor; a commit that adds five facts gets one pooled
  representation in which the fact the user means is diluted. This reranker
  looks at each delta line separately (max cosine between the query and each
  changed item) and adds an IDF-weighted overlap of rare query terms (names,
  numbers, places), then combines both with the normalised fused score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from chronomem.embedders import resolve_embedder, rounded, shared_cache, similarities
from chronomem.query import tokens

Candidate = tuple[int, str, float]  # (version_id, descriptor_text, fused_score)
_DELTA_LINE = re.compile(r"^(add|update|delete|consolidate|revert|redact|summary):\s*(.*)$")


@runtime_checkable
class Reranker(Protocol):
    """Reorders candidate versions for a query; returns ``[(version_id, score)]`` best first."""

    def rerank(self, query: str, candidates: list[Candidate]) -> list[tuple[int, float]]: ...


class CrossEncoderReranker:
    """Scores (query, descriptor) pairs with a sentence-transformers CrossEncoder."""

    def __init__(self, model_name: str, *, device: str = "cpu", batch_size: int = 32) -> None:
        if not isinstance(model_name, str) or not model_name.strip():
            raise ValueError("CrossEncoderReranker needs a model name or local path")
        self.model_name = model_name
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import CrossEncoder  # heavy: import lazily
            except ImportError as exc:  # pragma: no cover - dependency is declared
                raise RuntimeError("CrossEncoderReranker needs sentence-transformers") from exc
            try:
                self._model = CrossEncoder(self.model_name, device=self.device)
            except Exception as exc:
                raise RuntimeError(
                    f"could not load cross-encoder {self.model_name!r} ({exc.__class__.__name__}: "
                    f"{exc}); pass a local model path or a hub name reachable from this machine"
                ) from exc
        return self._model

    def rerank(self, query: str, candidates: list[Candidate]) -> list[tuple[int, float]]:
        """Cross-encoder score per candidate, best first."""
        if not candidates:
            return []
        scores = self._load().predict(
            [(query, d) for _, d, _ in candidates],
            batch_size=self.batch_size,
            show_progress_bar=False,
        )
        ranked = [
            (vid, float(s)) for (vid, _, _), s in zip(candidates, rounded(scores), strict=True)
        ]
        return sorted(ranked, key=lambda kv: (-kv[1], kv[0]))  # ties: lower version id


# A descriptor's token set by text: the same candidates come back for many requests.
# Holds descriptor text, so a redaction clears it (erasure.forget).
_TERMS: dict[str, frozenset[str]] = {}
_TERMS_MAX = 100_000


def descriptor_terms(descriptor: str) -> frozenset[str]:
    """The :func:`~chronomem.query.tokens` of ``descriptor`` as a set (memoised)."""
    got = _TERMS.get(descriptor)
    if got is None:
        if len(_TERMS) >= _TERMS_MAX:
            _TERMS.clear()
        got = _TERMS[descriptor] = frozenset(tokens(descriptor))
    return got


def forget_descriptor_terms() -> None:
    """Drop every memoised descriptor token set (a redaction erased some text)."""
    _TERMS.clear()


def delta_lines(descriptor: str) -> list[str]:
    """The changed-item texts (and summary) of a descriptor, one per delta line."""
    out = []
    for line in descriptor.split("\n"):
        m = _DELTA_LINE.match(line.strip())
        if m and m.group(2).strip():
            out.append(m.group(2).strip())
    return out or [descriptor]


class DeltaReranker:
    """Offline fine-grained reranker: per-item cosine + rare-term overlap + fused score.

    ``score = w_fused * fused/max(fused) + w_item * max_i cos(q, item_i)
    + w_terms * idf_overlap``, where the IDF is computed over the candidate set
    (terms shared by every candidate carry no weight) and capitalised or numeric
    query terms count double. Given the lexical stage's scores (``lexical``), it adds
    ``w_lexical * bm25 / max(bm25)`` over the candidates: the weight 0.5 was set on the
    tuning sets only (locomo_v3_tuning, locomo_handwritten and the LoCoMo templates,
    session granularity; docs/metrics.md), where the stage's own bm25 was the evidence
    the rank fusion threw away (ChronoMem session R@1 80.2 / 70.8 / 72.5 -> 91.1 / 75.0 /
    90.5). On the synthetic dev split of
    :mod:`chronobench.bench.rerank_eval` (seeds 0-3) R@1 was the same for every
    weight in a small grid (0.975 vs hybrid 0.838), so the defaults are round
    numbers; on its test split (seeds 100-107) R@1 goes from 0.856 to 0.944.
    """

    def __init__(
        self,
        embedder: Any = None,
        *,
        w_fused: float = 0.3,
        w_item: float = 1.0,
        w_terms: float = 0.5,
        w_lexical: float = 0.5,
    ) -> None:
        self.embedder = embedder  # None: the store injects its own embedder
        self.w_fused, self.w_item, self.w_terms = w_fused, w_item, w_terms
        self.w_lexical = w_lexical

    def _encode(self, texts: list[str]) -> np.ndarray:
        if self.embedder is None:
            self.embedder = resolve_embedder("minilm")
        return shared_cache(self.embedder).encode(texts)

    def rerank(
        self,
        query: str,
        candidates: list[Candidate],
        lexical: dict[int, float] | None = None,
    ) -> list[tuple[int, float]]:
        """Rescore candidates; see the class docstring for the formula. ``lexical``: the
        lexical stage's scores (higher is better) of the candidates it returned, the
        stage's own evidence, added as ``w_lexical * score / max score``."""
        if not candidates:
            return []
        lex = lexical or {}
        max_lex = max((lex.get(v, 0.0) for v, _, _ in candidates), default=0.0)
        lines = [delta_lines(d) for _, d, _ in candidates]
        flat = [ln for group in lines for ln in group]
        vecs = self._encode([query, *flat])
        qv, item_vecs = vecs[0], vecs[1:]
        sims = similarities(item_vecs, qv)
        max_fused = max(c[2] for c in candidates) or 1.0
        term_scores = self._term_overlap(query, [d for _, d, _ in candidates])
        out, pos = [], 0
        for (vid, _, fused), group, terms in zip(candidates, lines, term_scores, strict=True):
            best = float(sims[pos : pos + len(group)].max())
            pos += len(group)
            score = self.w_fused * fused / max_fused + self.w_item * best + self.w_terms * terms
            if max_lex > 0:
                score += self.w_lexical * max(0.0, lex.get(vid, 0.0)) / max_lex
            out.append((vid, float(rounded(score))))
        return sorted(out, key=lambda kv: (-kv[1], kv[0]))  # ties: lower version id

    @staticmethod
    def _term_overlap(query: str, descriptors: Sequence[str]) -> list[float]:
        q_terms = tokens(query)
        if not q_terms:
            return [0.0] * len(descriptors)
        strong = {t.lower() for t in re.findall(r"\b(?:[A-Z]\w+|\w*\d\w*)\b", query)}
        doc_terms = [descriptor_terms(d) for d in descriptors]
        n = len(descriptors)
        weights = {}
        for t in q_terms:
            df = sum(t in terms for terms in doc_terms)
            w = math.log((n + 1) / (df + 0.5)) if df < n else 0.0
            weights[t] = w * (2.0 if t in strong else 1.0)
        total = sum(weights.values()) or 1.0
        return [sum(w for t, w in weights.items() if t in terms) / total for terms in doc_terms]
