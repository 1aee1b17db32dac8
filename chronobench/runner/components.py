"""The runner's registries, and :func:`resolve_cell`: a :class:`~chronobench.spec.RunSpec`
-> :class:`Components`, every component resolved and its options checked once.

Groups: ``dataset`` (:data:`DATASETS`), ``system`` (:data:`chronobench.systems.registry.SYSTEMS`),
``backbone`` (:data:`chronobench.backbones.registry.BACKBONES`), ``selector``
(:data:`chronobench.selectors.SELECTORS`), ``retriever`` (:data:`RETRIEVERS`), ``reranker``
(:data:`RERANKERS`) and ``task`` (:data:`TASKS`: a task kind -> the cell runner
``f(components) -> run folder``). Register into them with ``REGISTRY.register(name,
"module:attr")``.

A cell is built only from what :func:`resolve_cell` returns: the spec is checked once,
before any work, and nothing is looked up again while the cell runs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chronobench.backbones.registry import BACKBONES, checked_params
from chronobench.errors import ConfigError, MissingDependencyError
from chronobench.options import whole_options
from chronobench.registry import Entry, Registry
from chronobench.resolver_options import settle_resolver
from chronobench.runner.dataset_registry import DATASETS
from chronobench.runner.task_kind import TaskKind, as_task_kind
from chronobench.selectors import SELECTORS
from chronobench.spec import LLM_FREE_BACKBONES, RetrieverSpec, RunSpec, SystemSpec
from chronobench.systems.registry import SYSTEMS

__all__ = [
    "BACKBONES",
    "DATASETS",
    "RERANKERS",
    "RETRIEVERS",
    "SELECTORS",
    "SYSTEMS",
    "TASKS",
    "Component",
    "Components",
    "checked_component",
    "needs_backbone",
    "resolve_cell",
]

# task kind -> its track's TaskKind (chronobench/runner/task_kind.py): how its cells are
# checked, resolved, built and run, and how its runs show on the board and in the viewer.
# Each track is a folder, chronobench/tracks/<name>/, declaring its TRACK; a plug-in track
# is an entry point in the "chronobench.tracks" group naming its own. ``order``: the
# viewer's headline table lists the tracks so.
TASKS = Registry(
    "task",
    entry_points="chronobench.tracks",
    hint="a track is a folder declaring a TaskKind, registered here or by an entry point "
    "in the 'chronobench.tracks' group (docs/plugins.md)",
)
TASKS.register("benchmark", "chronobench.tracks.benchmark:TRACK", order=10)
TASKS.register("selective", "chronobench.tracks.selective:TRACK", order=20)  # RQ4
TASKS.register("peers", "chronobench.tracks.peers:TRACK", order=30)  # memory systems
TASKS.register("repair", "chronobench.tracks.repair:TRACK", order=40)

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
        "feature": "chronomem.rerank:DeltaReranker",
    },
)
RERANKERS.register(
    "cross_encoder",
    "chronobench.runner.components:cross_encoder_reranker",
    requires=[("sentence_transformers", "pip install sentence-transformers")],
)


# ---- small factories the registries point at ----------------------------------------


def no_reranker() -> None:
    """The ``none`` reranker: the fused order is final."""
    return None


def cross_encoder_reranker(model: str, device: str = "cpu", batch_size: int = 32) -> Any:
    """A sentence-transformers CrossEncoder over the fused top-K."""
    from chronomem.rerank import CrossEncoderReranker

    return CrossEncoderReranker(model, device=device, batch_size=batch_size)


def store_retrieval_options(spec: RetrieverSpec) -> dict[str, Any]:
    """The ChronoMem store options of a retriever config (stage, fusion, depth)."""
    out: dict[str, Any] = {
        "stage": spec.stage,
        "rrf_k0": int(spec.rrf_k0),
        "depth": int(spec.candidates),
    }
    if spec.meaning is not None:  # absent otherwise: the store settings of older cells stay
        out["meaning"] = spec.meaning
        out["meaning_runtime"] = spec.meaning_runtime
    return out


# ---- what a cell is built from -------------------------------------------------------


@dataclass(frozen=True)
class Component:
    """A registry entry with its checked config options: ``model``, the validated options
    model, for an entry that has one (its target takes that instance); otherwise the
    ``options`` dict, passed as keywords (a plug-in checked by its signature)."""

    entry: Entry
    options: dict[str, Any] = field(default_factory=dict)
    model: BaseModel | None = None

    @property
    def name(self) -> str:
        return self.entry.name

    def build(self, *args: Any) -> Any:
        """Import the target and call it with ``args`` and the checked options."""
        if self.model is not None:
            return self.entry.load()(*args, self.model)
        return self.entry.load()(*args, **self.options)


def checked_component(entry: Entry, options: Mapping[str, Any], *, where: str) -> Component:
    """``entry`` with ``options`` checked. A target that takes its options model whole
    (:func:`~chronobench.options.whole_options`) gets the instance, and ``options``
    become every field's value: the defaults filled in, so a spec records the same
    options whether a config states a default or leaves it to the model."""
    model = whole_options(
        entry.load(), entry.options, options, skip=entry.skip, where=where, group=entry.group
    )
    if model is None:  # a target that takes keywords (a plug-in's choice): as given
        return Component(entry, entry.check_options(options, where=where))
    return Component(entry, model.model_dump(mode="json"), model)


def needs_backbone(spec: RunSpec) -> bool:
    """Whether a benchmark cell constructs a backbone (generation, or paraphrased queries)."""
    return spec.task.generates or spec.dataset.paraphrase


@dataclass(frozen=True)
class Components:
    """Everything one cell uses, resolved from its spec by :func:`resolve_cell`."""

    spec: RunSpec
    task: Entry
    backbone: Component
    # Whether the backbone's packages were found (checked once, when the cell needs it).
    backbone_checked: bool = False
    dataset: Entry | None = None
    retriever: dict[str, Any] = field(default_factory=dict)
    reranker: Component | None = None
    selectors: dict[str, Entry] = field(default_factory=dict)
    system: Component | None = None
    # The task kind's validated task.params (None: a kind without a params model).
    params: BaseModel | None = None

    def describe(self) -> str:
        """The spec's one-line description."""
        return self.spec.describe()

    @property
    def kind(self) -> TaskKind:
        """The cell's task kind (its registry entry's target)."""
        return as_task_kind(self.task.load())

    def run(self) -> Path:
        """Run the cell with its task kind's runner; returns the run folder."""
        return self.kind.run_cell(self)

    def build_parts(self, *, backbone: bool = True) -> list[str]:
        """Build every component the cell constructs, without data or weights (the
        backbone only when ``backbone``); returns the names of what was built."""
        return self.kind.build_parts(self, backbone=backbone)

    def build_backbone(self) -> Any:
        """The backbone behind the persistent call cache."""
        from chronobench.backbones import CachedBackbone

        if not self.backbone_checked:
            self.backbone.entry.check_available()
        target = self.backbone.entry.load()
        # A backbone that converts a model on first use keeps it in the run's cache folder.
        extra = {}
        if getattr(target, "uses_cache_dir", False) and "cache_dir" not in self.backbone.options:
            extra["cache_dir"] = str(self.spec.paths.cache_dir)
        inner = target(**self.backbone.options, **extra)
        return CachedBackbone(
            inner,
            Path(self.spec.paths.cache_dir) / "llm_cache.sqlite",
            summary_max_new_tokens=self.spec.backbone.generation.summary_max_new_tokens,
        )

    def build_system(self, ctx: Any) -> Any:
        """The system under test, with its checked options."""
        if self.system is None:
            raise ConfigError(f"{self.spec.describe()}: this cell has no system to build")
        return self.system.build(ctx)

    def build_selector(self, name: str, stores: Any) -> Any:
        """An RQ1 selector over the run's stores."""
        return self.selectors[name].load()(name, stores)

    def build_store_provider(self) -> Any:
        """Post-exposure ChronoMem stores with the spec's embedder, retriever and reranker."""
        from chronobench.hashing import canonical_json
        from chronobench.systems.stores import StoreProvider

        spec = self.spec
        location = spec.store.url if spec.store.backend == "postgres" else None
        # What makes two cells' stores equal (the cache folder only holds vectors).
        settings = canonical_json(
            {
                "embedder": spec.embedder.model_dump(mode="json"),
                "reranker": spec.reranker.model_dump(mode="json"),
                "retriever": self.retriever,
                "location": location,
            }
        )
        return StoreProvider(
            embedder=spec.embedder.model_dump(),
            cache_dir=spec.paths.cache_dir,  # persistent embedding cache beside the call cache
            reranker=self.reranker.build() if self.reranker is not None else None,
            rerank_depth=int(spec.reranker.top_k),
            location=location,
            settings=settings,
            **self.retriever,
        )

    def load_data(self, backbone: Any = None) -> Any:
        """The cell's streams and queries (built first when needed)."""
        from chronobench.runner.datasets import load_run_data

        if self.dataset is None:
            raise ConfigError(f"{self.spec.describe()}: this cell's task reads no dataset")
        return load_run_data(self.spec.dataset, Path(self.spec.paths.data_dir), backbone)


def _where(group: str, choices: Mapping[str, str] | None) -> str:
    if choices and choices.get(group):
        return f"configs/{group}/{choices[group]}.yaml, or an override of {group}.*"
    return f"the {group} config group"


def _backbone(spec: RunSpec) -> Component:
    # The params were checked and normalised by resolve_cell (normalised_backbone).
    entry = BACKBONES.entry(spec.backbone.name)
    return Component(entry, {"model": spec.backbone.model, **spec.backbone.params})


def resolve_cell(spec: RunSpec, *, choices: Mapping[str, str] | None = None) -> Components:
    """Resolve every component a cell uses and check its options (no heavy imports, no
    model loading); the backbone's packages are checked when the cell will build it.
    Raises ConfigError / MissingDependencyError naming the key and its config file."""
    entry = TASKS.entry(spec.task.kind)
    spec = normalised_backbone(normalised_dataset(spec, choices), choices)
    kind = as_task_kind(entry.load())
    return kind.resolve_cell(spec, entry, choices, where=_where("task", choices))


def normalised_dataset(spec: RunSpec, choices: Mapping[str, str] | None = None) -> RunSpec:
    """``spec`` with its dataset checked by its :data:`DATASETS` entry and its params
    normalised (:func:`chronobench.runner.datasets.checked_dataset`): what every task
    kind's cell records and hashes."""
    from chronobench.runner.datasets import checked_dataset

    dataset = DATASETS.entry(spec.dataset.name).load()
    checked = checked_dataset(dataset, spec.dataset, where=_where("dataset", choices))
    return spec.model_copy(update={"dataset": checked})


def normalised_backbone(spec: RunSpec, choices: Mapping[str, str] | None = None) -> RunSpec:
    """``spec`` with its backbone params checked against the backbone's constructor and
    normalised (:func:`chronobench.backbones.registry.checked_params`: the entry's
    recorded params filled with their defaults). The class is imported by name, which
    never imports vllm or torch."""
    b = spec.backbone
    where = _where("backbone", choices)
    params = checked_params(b.name, b.model, b.params, where=where)
    # A backbone that answers from a file (backbone=replay) pins its content here, once:
    # the run id then names the replies, not the file's path (BackboneSpec.identity).
    pin = getattr(BACKBONES.entry(b.name).load(), "pin_content", None)
    if pin is not None:
        try:
            params = pin(params)
        except ValueError as exc:
            raise ConfigError(f"{exc} [{where}]") from None
    return spec.model_copy(update={"backbone": b.model_copy(update={"params": params})})


def resolve_track(
    spec: RunSpec, task: Entry, choices: Mapping[str, str] | None = None
) -> Components:
    """A track's cell (repair, peers, selective): its kind's check owns its dataset,
    systems and options; only the backbone is resolved here."""
    return Components(spec=spec, task=task, backbone=_backbone(spec))


def resolve_benchmark(
    spec: RunSpec, task: Entry, choices: Mapping[str, str] | None = None
) -> Components:
    """A benchmark cell: dataset, retriever, reranker, selectors, system and backbone."""
    if spec.task.params:
        key = sorted(spec.task.params)[0]
        raise ConfigError(
            f"config key 'task.params.{key}': the benchmark task reads no params (they are "
            f"for other task kinds) [{_where('task', choices)}]"
        )
    dataset = DATASETS.entry(spec.dataset.name)
    if dataset.load().plan is None:
        raise ConfigError(
            f"config key 'dataset.name': dataset {spec.dataset.name!r} has no builder (its "
            f"own task kind builds and reads it) [{_where('dataset', choices)}]"
        )
    retriever = RETRIEVERS.entry(spec.retriever.stage).load()(spec.retriever)
    rerank_entry = RERANKERS.entry(spec.reranker.name)
    rerank_entry.check_available()
    reranker = checked_component(
        rerank_entry, spec.reranker.options, where=_where("reranker", choices)
    )
    selectors: dict[str, Entry] = {}
    if spec.task.selection:
        if not spec.selectors:
            raise ConfigError("config key 'selectors': empty, but task.selection is on")
        selectors = {name: SELECTORS.entry(name) for name in spec.selectors}
    sys_entry = SYSTEMS.entry(spec.system.name)
    system = checked_component(sys_entry, spec.system.options, where=_where("system", choices))
    if system.model is not None:
        # The spec (run id, recorded config) names every option, a default as well; a
        # resolver that is off leaves its keys out again (settle_resolver).
        settled = settle_resolver(system.options, spec.backbone.name)
        spec = spec.model_copy(update={"system": SystemSpec(name=sys_entry.name, **settled)})
    if spec.resolver == "backbone" and spec.backbone.name in LLM_FREE_BACKBONES:
        raise ConfigError(
            f"config key 'system.resolver': backbone={spec.backbone.name!r} is no language "
            "model and cannot pick among candidate versions; use system.resolver=auto (off "
            f"with it) or none, or an LLM backbone [{_where('system', choices)}]"
        )
    if spec.store.backend == "postgres" and not spec.store.url:
        raise ConfigError(
            "config key 'store.url': store=postgres needs a server URL; set "
            "CHRONOBENCH_PG_URL=postgresql://user@host:port/db or store.url=... "
            f"[{_where('store', choices)}]"
        )
    if spec.store.backend == "postgres" and importlib.util.find_spec("psycopg") is None:
        raise MissingDependencyError(
            "store=postgres needs psycopg 3, which is not installed: "
            "pip install 'chronobench[postgres]'"
        )
    backbone = _backbone(spec)
    checked = needs_backbone(spec)
    if checked:
        # Fail fast (one line) when the backbone needs a package that is missing.
        backbone.entry.check_available()
    return Components(
        spec=spec,
        task=task,
        backbone=backbone,
        backbone_checked=checked,
        dataset=dataset,
        retriever=retriever,
        reranker=reranker,
        selectors=selectors,
        system=system,
    )
