"""Version selectors for RQ1, each one stage of the ChronoMem store's resolve pipeline.

BEIR-shaped contract (:class:`chronobench.protocols.Selector`): ``search(writes,
{request_id: text}, top_k) -> {request_id: [(write_id, score), ...]}`` over the stream's
public writes (what a system sees) with opaque request ids; versions are write ids on
the stream's own timeline (0 = empty store). Stages:

- ``bm25``: SQLite FTS5 bm25() over commit descriptors;
- ``dense``: cosine over descriptor embeddings;
- ``hybrid``: both, fused by reciprocal rank fusion;
- ``chronomem``: hybrid + reranker + intent handling (undo targets the version before
  the matched commit), i.e. what ``rollback_to_version_by_nl_query`` restores, and its
  confidence gate: a request the plan refuses (it names no content, or content the
  memory does not hold) ranks nothing, and the reason is kept in ``refusals``;
- ``chronomem_norerank``: the same without the reranker, i.e. hybrid retrieval + the
  request rules (content words, intent, episode scope); shows what the reranker adds;
- ``bm25_rules`` / ``dense_rules``: the request rules on top of a single retrieval stage
  (no reranker). With ``chronomem_norerank`` as "hybrid + rules", these rows separate
  reading the request (``x`` vs ``x_rules``) from retrieval (``bm25_rules`` vs
  ``dense_rules`` vs ``chronomem_norerank``);
- ``chronomem_meaning``: ``chronomem`` with the store's meaning stage
  (:mod:`chronomem.meaning`) reading with all-mpnet-base-v2, installed by ``python -m
  chronobench install-model mpnet``. Not in the main job (the model is a 400 MB
  download and its first reading of LoCoMo takes ~20 minutes on 2 cores):
  ``experiment=nl_meaning`` runs it on the same request files, so its row joins their
  tables;
- ``chronomem_reader``: ``chronomem_meaning`` whose stage also reads its best candidates
  with Qwen2.5-Coder-1.5B-Instruct by query likelihood (:mod:`chronomem.reader`; ``python
  -m chronobench install-model qwen-1b5``, CTranslate2): ``experiment=nl_reader``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chronobench.protocols import StreamWrite
from chronobench.registry import Registry
from chronobench.systems.base import APP

_STAGES = {
    "bm25": "resolve_lexical",
    "dense": "resolve_dense",
    "hybrid": "resolve_hybrid",
    "chronomem": "resolve",
    "chronomem_norerank": "resolve",
    "bm25_rules": "resolve",
    "dense_rules": "resolve",
    "chronomem_meaning": "resolve",
    "chronomem_reader": "resolve",
}
_KWARGS: dict[str, dict[str, Any]] = {
    "chronomem_norerank": {"rerank": False, "stage": "hybrid"},
    "bm25_rules": {"rerank": False, "stage": "lexical"},
    "dense_rules": {"rerank": False, "stage": "dense"},
}

SELECTORS = Registry(
    "selector",
    hint="in-process: chronobench.selectors.register_selector(name, 'module:factory')",
    entry_points="chronobench.selectors",
)


def register_selector(
    name: str,
    target: str | Any,
    *,
    label: str | None = None,
    order: float | None = None,
    source: str | None = None,
) -> None:
    """Register an RQ1 selector: ``target`` is (``"module:attr"`` of) a factory called as
    ``factory(name, stores)`` that returns a :class:`chronobench.protocols.Selector`;
    ``label`` and ``order`` are its leaderboard row and position."""
    SELECTORS.register(name, target, label=label, order=order, source=source)


# Table order (10, 20, ...): single stages, stages + request rules, then ChronoMem.
for _i, (_name, _label) in enumerate(
    (
        ("bm25", "BM25-only"),
        ("dense", "Dense-only (MiniLM)"),
        ("hybrid", "Hybrid (RRF)"),
        ("bm25_rules", "BM25 + request rules"),
        ("dense_rules", "Dense + request rules"),
        ("chronomem_norerank", "Hybrid + request rules (ChronoMem w/o reranker)"),
        ("chronomem", "ChronoMem (hybrid + rules + reranker)"),
        ("chronomem_meaning", "ChronoMem + meaning stage (all-mpnet-base-v2)"),
        ("chronomem_reader", "ChronoMem + meaning stage + reader (Qwen2.5-1.5B likelihood)"),
    )
):
    register_selector(
        _name, "chronobench.selectors:StoreSelector", label=_label, order=10 * (_i + 1)
    )


def selector_names() -> list[str]:
    """The built-in selectors (stages of the store's resolve pipeline)."""
    return list(_STAGES)


# The selectors that act as the system would: the full pipeline with its confidence gate.
# The ablation rows rank only, so they show what each stage retrieves.
_GATED = frozenset({"chronomem", "chronomem_meaning", "chronomem_reader"})
# The selectors that read with a meaning stage, and its model (a StoreProvider name), and
# those whose stage also has a reader (a packaged backbone).
_MEANING = {"chronomem_meaning": "mpnet", "chronomem_reader": "mpnet"}
_READER = {"chronomem_reader": "qwen-1b5"}


class StoreSelector:
    """One resolve stage of a post-exposure ChronoMem store.

    ``refusals`` maps the request ids of the last :meth:`search` that were refused to the
    gate's reason (empty for the ungated stages).
    """

    def __init__(self, name: str, stores: Any) -> None:
        if name not in _STAGES:
            raise KeyError(f"unknown selector {name!r}; choose from {', '.join(_STAGES)}")
        self.name = name
        self.stores = stores
        self.refusals: dict[str, str] = {}
        # A meaning model that is not installed fails here, before any search.
        self.stage = None
        if name in _READER:
            self.stage = stores.meaning_stage(_MEANING[name], _READER[name])
        elif name in _MEANING:
            self.stage = stores.meaning_stage(_MEANING[name])

    def search(
        self, writes: Sequence[StreamWrite], queries: dict[str, str], top_k: int
    ) -> dict[str, list[tuple[int, float]]]:
        """Rank the stream's versions for every request."""
        ing = self.stores.get(writes)
        method = getattr(ing.store, _STAGES[self.name])
        if self.stage is None:
            return self._rank(ing, method, queries, top_k)
        # The stores are shared by every selector of a cell: the stage is lent to the
        # store for this search only.
        kept = ing.store.meaning
        ing.store.meaning = self.stage
        try:
            return self._rank(ing, method, queries, top_k)
        finally:
            ing.store.meaning = kept

    def _rank(
        self, ing: Any, method: Any, queries: dict[str, str], top_k: int
    ) -> dict[str, list[tuple[int, float]]]:
        out: dict[str, list[tuple[int, float]]] = {}
        self.refusals = {}
        for qid, text in queries.items():
            if self.name in _GATED:
                why = _refusal(ing.store, ing.user, text)
                if why is not None:
                    self.refusals[qid] = why
                    out[qid] = []
                    continue
            ranked = method(APP, ing.user, text, k=top_k, **_KWARGS.get(self.name, {}))
            out[qid] = [(ing.j_of[v], float(s)) for v, s in ranked if v in ing.j_of]
        return out


def _refusal(store: Any, user: str, text: str) -> str | None:
    """Why the store's rollback plan refuses ``text`` (None: it would act)."""
    from chronomem import UncertainRequestError

    try:
        store.plan_rollback_by_nl_query(APP, user, text)
    except UncertainRequestError as exc:
        return str(exc)[:300]
    return None
