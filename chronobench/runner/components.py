"""One lazy ``"module:attr"`` registry per config group, and the builders that turn a
:class:`~chronobench.runner.spec.RunSpec` into components.

Groups: ``dataset`` (:data:`DATASETS`), ``system`` (:data:`chronobench.systems.registry.SYSTEMS`),
``backbone`` (:data:`chronobench.backbones.registry.BACKBONES`), ``retriever``
(:data:`RETRIEVERS`), ``reranker`` (:data:`RERANKERS`), ``selector`` (:data:`SELECTORS`)
and ``task`` (:data:`TASKS`: a task kind -> the cell runner ``f(spec) -> run folder``).
Register into them with ``REGISTRY.register(name, "module:attr")``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chronobench.errors import ConfigError
from chronobench.registry import Registry
from chronobench.runner.options import check_call_options
from chronobench.runner.spec import RerankerSpec, RetrieverSpec, RunSpec

# dataset name -> a loader class: ``check(spec)`` validates ``dataset.params``;
# ``load(spec, data_dir=..., backbone=...)`` returns RunData.
DATASETS = Registry(
    "dataset",
    {
        "locomo": "chronobench.runner.datasets:BuiltDatasetLoader",
        "mab": "chronobench.runner.datasets:BuiltDatasetLoader",
    },
)

# task kind -> cell runner ``run(spec: RunSpec) -> Path`` (the run folder).
TASKS = Registry(
    "task",
    {
        "benchmark": "chronobench.runner.cell:run_benchmark_cell",
        # Issue 11's repair track (helper F's module; resolved only when task.kind=repair).
        "repair": "chronobench.repair.run:run_repair_cell",
    },
)

# retrieval stage -> ``f(spec: RetrieverSpec) -> dict`` of ChronoMem store options.
RETRIEVERS = Registry(
    "retriever",
    {
        stage: "chronobench.runner.components:store_retrieval_options"
        for stage in ("lexical", "dense", "hybrid")
    },
)

# reranker name -> factory(**options) -> reranker object or None.
RERANKERS = Registry(
    "reranker",
    {
        "none": "chronobench.runner.components:no_reranker",
        "feature": "chronobench.memory.rerank:DeltaReranker",
    },
)
RERANKERS.register(
    "cross_encoder",
    "chronobench.runner.components:cross_encoder_reranker",
    requires=[("sentence_transformers", "pip install sentence-transformers")],
)


class _SelectorRegistry(Registry):
    """Selector name -> factory ``(name, stores) -> Selector``. The built-in names are
    the stages :mod:`chronobench.selectors` lists, read on first use."""

    _loaded = False

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            from chronobench.selectors import selector_names

            for name in selector_names():
                if name not in self._entries:
                    self._entries[name] = "chronobench.selectors:StoreSelector"

    def names(self) -> list[str]:
        self._load()
        return super().names()

    def _known(self, name: str) -> None:
        self._load()
        super()._known(name)


SELECTORS = _SelectorRegistry("selector")


def register_selector(name: str, target: str | Any) -> None:
    """Register an RQ1 selector: ``target`` is ``"module:attr"`` of a factory called as
    ``factory(name, stores)`` that returns a :class:`chronobench.protocols.Selector`."""
    SELECTORS.register(name, target)


# ---- small factories the registries point at ----------------------------------------


def no_reranker() -> None:
    """The ``none`` reranker: the fused order is final."""
    return None


def cross_encoder_reranker(model: str, device: str = "cpu", batch_size: int = 32) -> Any:
    """A sentence-transformers CrossEncoder over the fused top-K."""
    from chronobench.memory.rerank import CrossEncoderReranker

    return CrossEncoderReranker(model, device=device, batch_size=batch_size)


def store_retrieval_options(spec: RetrieverSpec) -> dict[str, Any]:
    """The ChronoMem store options of a retriever config (stage, fusion, depth)."""
    return {"stage": spec.stage, "rrf_k0": int(spec.rrf_k0), "depth": int(spec.candidates)}


# ---- checking a spec before any work -------------------------------------------------


def _where(group: str, choices: Mapping[str, str] | None) -> str:
    if choices and choices.get(group):
        return f"configs/{group}/{choices[group]}.yaml, or an override of {group}.*"
    return f"the {group} config group"


def check_spec(spec: RunSpec, *, choices: Mapping[str, str] | None = None) -> None:
    """Resolve every component a cell uses and check its options (no heavy imports, no
    model loading). Raises ConfigError / MissingDependencyError."""
    from chronobench.backbones.registry import BACKBONES
    from chronobench.systems.registry import check_system_options

    TASKS.target(spec.task.kind)
    if spec.task.kind != "benchmark":
        # Another track: its cell runner owns its dataset, systems and options. It may
        # expose ``check_spec(spec)`` to validate them before any work starts.
        checker = getattr(TASKS.resolve(spec.task.kind), "check_spec", None)
        if checker is not None:
            checker(spec)
        return
    if spec.task.params:
        key = sorted(spec.task.params)[0]
        raise ConfigError(
            f"config key 'task.params.{key}': the benchmark task reads no params (they are "
            f"for other task kinds) [{_where('task', choices)}]"
        )
    DATASETS.resolve(spec.dataset.name).check(spec.dataset, where=_where("dataset", choices))
    RETRIEVERS.target(spec.retriever.stage)
    check_call_options(
        RERANKERS.resolve(spec.reranker.name),
        spec.reranker.options,
        where=_where("reranker", choices),
        group="reranker",
    )
    if spec.task.selection:
        if not spec.selectors:
            raise ConfigError("config key 'selectors': empty, but task.selection is on")
        for name in spec.selectors:
            SELECTORS.target(name)
    check_system_options(spec.system.name, spec.system.options, where=_where("system", choices))
    if spec.store.backend == "postgres" and not spec.store.url:
        raise ConfigError(
            "config key 'store.url': store=postgres needs a server URL; set "
            "CHRONOBENCH_PG_URL=postgresql://user@host:port/db or store.url=... "
            f"[{_where('store', choices)}]"
        )
    # The backbone class is resolved by name only (importing it never imports vllm);
    # params are checked against its constructor.
    cls = BACKBONES.target(spec.backbone.name)
    if isinstance(cls, str):
        import importlib

        module, _, attr = cls.partition(":")
        cls = getattr(importlib.import_module(module), attr)
    check_call_options(
        cls,
        {"model": spec.backbone.model, **spec.backbone.params},
        where=_where("backbone", choices),
        group="backbone",
    )


def needs_backbone(spec: RunSpec) -> bool:
    """Whether the cell constructs a backbone (generation, or paraphrased queries)."""
    return spec.task.generates or spec.dataset.paraphrase


def check_backbone_available(spec: RunSpec) -> None:
    """Fail fast (one line) when the cell's backbone needs a package that is missing."""
    if needs_backbone(spec):
        from chronobench.backbones.registry import BACKBONES

        BACKBONES.check_available(spec.backbone.name)


# ---- building components -------------------------------------------------------------


def build_reranker(spec: RerankerSpec) -> Any:
    """The reranker object (None for ``none``)."""
    return RERANKERS.create(spec.name, **spec.options)


def build_store_provider(spec: RunSpec) -> Any:
    """Post-exposure ChronoMem stores with the spec's embedder, retriever and reranker."""
    from chronobench.systems.stores import StoreProvider

    return StoreProvider(
        embedder=spec.embedder.model,
        cache_dir=spec.paths.cache_dir,  # persistent embedding cache beside the call cache
        reranker=build_reranker(spec.reranker),
        rerank_depth=int(spec.reranker.top_k),
        location=spec.store.url if spec.store.backend == "postgres" else None,
        **RETRIEVERS.create(spec.retriever.stage, spec.retriever),
    )


def build_backbone(spec: RunSpec) -> Any:
    """The spec's backbone behind the persistent call cache."""
    from chronobench.backbones import CachedBackbone
    from chronobench.backbones.registry import BACKBONES

    b = spec.backbone
    inner = BACKBONES.create(b.name, model=b.model, **dict(b.params))
    return CachedBackbone(inner, Path(spec.paths.cache_dir) / "llm_cache.sqlite")


def build_system(spec: RunSpec, ctx: Any) -> Any:
    """The system under test, with its checked options."""
    from chronobench.systems.registry import SYSTEMS, check_system_options

    opts = check_system_options(spec.system.name, spec.system.options, where="system")
    return SYSTEMS.create(spec.system.name, ctx, **opts)


def build_selector(name: str, stores: Any) -> Any:
    """An RQ1 selector over the run's stores."""
    return SELECTORS.create(name, name, stores)


def load_data(spec: RunSpec, backbone: Any = None) -> Any:
    """The cell's streams and queries (built first when needed)."""
    loader = DATASETS.create(spec.dataset.name)
    return loader.load(spec.dataset, data_dir=Path(spec.paths.data_dir), backbone=backbone)


def cell_runner(spec: RunSpec) -> Any:
    """The registered cell runner of the spec's task kind."""
    return TASKS.resolve(spec.task.kind)
