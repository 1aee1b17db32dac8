"""``RunSpec``: the one typed, validated description of a cell.

Built from the composed Hydra config at the start of every cell. :func:`spec_from_config`
checks the shape only: unknown keys are rejected (``extra="forbid"``) with an error that
names the key and the config file it came from. Component options (system, backbone
params, reranker, dataset params) belong to the registered components and are checked
by the runner when it resolves them (:func:`chronobench.runner.components.resolve_cell`);
this module imports no component, so the results schema and the leaderboard read specs
without importing the runner.

Its canonical hash, with the dataset manifest sha256 and the sha256 of any user query
file, is the run id; it is written whole to ``manifest.json``; its
:meth:`RunSpec.table_key` is the leaderboard key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from chronobench.hashing import canonical_json, sha256_text
from chronobench.published_ids import drop_identity_defaults
from chronobench.resolver_options import LLM_FREE_BACKBONES as LLM_FREE_BACKBONES  # re-exported
from chronobench.resolver_options import RESOLVER_KEYS as RESOLVER_KEYS  # re-exported
from chronobench.resolver_options import settle_resolver
from chronobench.spec_errors import config_error

# The store's own runtimes (docs/reproducibility.md: torch_f64 is what published figures use).
from chronomem.defaults import EMBEDDER_RUNTIMES as EMBEDDER_RUNTIMES  # re-exported
from chronomem.defaults import embedder_runtime

SPEC_VERSION = 1

#: RunSpec fields that say where and how a cell runs, not what it computes: left out of
#: the run id and of everything a run folder records (paths are machine-specific; the
#: flags change nothing a cell computes).
RUNTIME_FIELDS = (
    "paths", "progress", "overwrite", "leaderboard", "publish", "suite", "jobs",
    "reproducible", "verify_tolerance",
)  # fmt: skip


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Open(BaseModel):
    """A group whose extra keys are component options, checked by the component registry."""

    model_config = ConfigDict(extra="allow", frozen=True)

    @property
    def options(self) -> dict[str, Any]:
        """The keys beyond the declared fields (passed to the component)."""
        return dict(self.model_extra or {})


class SubsetSpec(_Strict):
    """A fixed, stated subset for slow backbones (``experiment=llm_cpu``): the first
    ``queries_per_stream`` rollback queries of each stream (of the first ``streams``).
    The stream's last-version questions are cut to the battery items those queries
    score (what the known set needs); ``system_finals`` false leaves the system's own
    last-version answers (``final_correct``, reported, choosing nothing) unasked.
    Unlike ``limit_*`` a subset run publishes: the board states the subset."""

    queries_per_stream: PositiveInt
    streams: PositiveInt | None = None
    system_finals: bool = False


class DatasetSpec(_Strict):
    name: str
    granularity: str
    source: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    paraphrase: bool = False
    queries_file: str | None = None
    # Turn-granularity gold of a hand-written query file with a notes file: "session"
    # (v* = the end of the named session) or "evidence" (an event-naming request cuts at
    # its evidence turns; see data_builders/user_queries/README.md).
    turn_gold: Literal["session", "evidence"] = "session"
    limit_streams: PositiveInt | None = None
    limit_queries: PositiveInt | None = None
    # A stated subset that publishes (None: every query; absent from the identity then).
    subset: SubsetSpec | None = None
    # A test fixture (e.g. tests/fixtures/locomo_tiny.json): its runs are never published.
    fixture: bool = False


class SystemSpec(_Open):
    name: str


class GenerationSpec(_Strict):
    max_new_tokens: PositiveInt = 128
    temperature: float = Field(0.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    # Summaries' own limit (RQ3 asks for up to 150 words; None: max_new_tokens). Left out
    # of every dump so specs without it keep their ids; RunSpec adds it when set.
    summary_max_new_tokens: PositiveInt | None = Field(None, exclude=True)


class BackboneSpec(_Strict):
    name: str
    model: str
    params: dict[str, Any] = Field(default_factory=dict)
    generation: GenerationSpec = Field(default_factory=GenerationSpec)
    # Requests per generate call (0 = all of a cell in one call); never changes results.
    chunk_size: NonNegativeInt = 0

    def identity(self) -> dict[str, Any]:
        """The backbone as a run id names it. A param ``<key>_sha256`` beside a param
        ``<key>`` pins the content of the file ``<key>`` names (a replayed run's
        ``completions``, filled in when the cell is resolved): the digest stays and the
        path leaves, so the same replies give the same id wherever their file sits."""
        out = self.model_dump(mode="json", exclude={"chunk_size"})
        params = out["params"]
        for key in [k for k in params if k.endswith(_PINS) and k[: -len(_PINS)] in params]:
            del params[key[: -len(_PINS)]]
        return out


#: The suffix of a backbone param that pins another param's file by content.
_PINS = "_sha256"


class RetrieverSpec(_Strict):
    stage: Literal["lexical", "dense", "hybrid"] = "hybrid"
    rrf_k0: NonNegativeInt = 60
    candidates: PositiveInt = 100
    # ChronoMem's meaning stage (chronomem.meaning): "mpnet" (all-mpnet-base-v2, from
    # `chronobench install-model mpnet`) or any sentence-transformers name or path;
    # None: no stage. Left out of every dump so specs without it keep their ids; RunSpec
    # adds it when set.
    meaning: str | None = Field(None, exclude=True)
    # How the meaning model runs (an embedder runtime; None: the embedder's, torch_f64, the
    # CPU-independent vectors). torch (float32) gave the same development figures
    # (docs/nl_parse.md).
    meaning_runtime: str | None = Field(None, exclude=True)

    @field_validator("meaning_runtime")
    @classmethod
    def _known_runtime(cls, value: str | None) -> str | None:
        if value is not None and value not in EMBEDDER_RUNTIMES:
            raise ValueError(f"meaning_runtime must be one of {EMBEDDER_RUNTIMES}, got {value!r}")
        return value


class RerankerSpec(_Open):
    name: str = "none"
    top_k: PositiveInt = 20


class TaskSpec(_Strict):
    # Which cell runner runs this task (chronobench.runner.components.TASKS).
    kind: str = "benchmark"
    selection: bool = False
    qa: bool = False
    summary: bool = False
    k: PositiveInt = 5
    # Options of other task kinds: validated by the kind's params model (its TASKS entry,
    # chronobench.runner.task_kind), which holds their defaults.
    params: dict[str, Any] = Field(default_factory=dict)

    @property
    def generates(self) -> bool:
        """Whether the cell asks a backbone anything (RQ2/RQ3)."""
        return self.qa or self.summary

    @property
    def tag(self) -> str:
        parts = [k for k in ("selection", "qa", "summary") if getattr(self, k)]
        return "+".join(parts) or self.kind


class EmbedderSpec(_Strict):
    model: str = "minilm"
    # torch_f64 | torch | onnx_int8 | auto (torch_f64, see EMBEDDER_RUNTIMES);
    # stored resolved, so a spec (and its run id) names the runtime that made its vectors.
    runtime: str = Field(default="auto", validate_default=True)

    @field_validator("runtime")
    @classmethod
    def _concrete_runtime(cls, value: str, info: ValidationInfo) -> str:
        return embedder_runtime(str(info.data.get("model", "minilm")), value)


class StoreSpec(_Strict):
    """Where ChronoMem's stores live: in-memory SQLite, or a PostgreSQL server at ``url``."""

    backend: Literal["sqlite", "postgres"] = "sqlite"
    url: str | None = None

    @field_serializer("url")
    def _no_password(self, url: str | None) -> str | None:
        """Run folders record the URL without its password (use ~/.pgpass or PGPASSWORD)."""
        if not url:
            return url
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))


class PathsSpec(_Strict):
    results_dir: str = "results"
    data_dir: str = "data/built"
    cache_dir: str = ".cache/chronobench"


class RunSpec(_Strict):
    """One cell, fully specified."""

    seed: int = 0
    selectors: list[str] = Field(default_factory=list)
    dataset: DatasetSpec
    system: SystemSpec
    backbone: BackboneSpec
    retriever: RetrieverSpec = Field(default_factory=RetrieverSpec)
    reranker: RerankerSpec = Field(default_factory=RerankerSpec)
    task: TaskSpec
    embedder: EmbedderSpec = Field(default_factory=EmbedderSpec)
    paths: PathsSpec = Field(default_factory=PathsSpec)
    store: StoreSpec = Field(default_factory=StoreSpec)
    # Where and how verbosely to run, and whether to publish: never part of the run id,
    # never written to a run's manifest or config.yaml (RUNTIME_FIELDS).
    progress: bool = True
    overwrite: bool = False
    leaderboard: bool = True
    # Whether this run may write committed files (results/LEADERBOARD.*, results/published/):
    # the main job and the named experiment presets set it; experiment=single does not.
    publish: bool = False
    # What `verify` expects of a re-run (docs/reproducibility.md): every published figure
    # back (true), or nothing (false: a volatile preset, skipped); per-figure tolerances.
    reproducible: bool = True
    verify_tolerance: dict[str, float] = Field(default_factory=dict)
    suite: list[list[str]] = Field(default_factory=list)
    # Cells run at once, each in a worker process (chronobench.runner.parallel): an
    # integer >= 1 or "auto" (one per CPU, at most 4). Where a cell runs never changes
    # what it writes.
    jobs: PositiveInt | Literal["auto"] = 1

    @model_validator(mode="before")
    @classmethod
    def _settle_resolver(cls, data: Any) -> Any:
        """``system.resolver: auto`` is decided here, once, from the backbone: what a run
        records and hashes is the resolver that runs (:func:`settle_resolver`)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("system"), Mapping):
            return data
        backbone = data.get("backbone")
        name = backbone.get("name") if isinstance(backbone, Mapping) else None
        return {**data, "system": settle_resolver(data["system"], name)}

    @property
    def resolver(self) -> str:
        """The system's request resolver: ``backbone`` or ``none``."""
        return str(self.system.options.get("resolver", "none"))

    def recorded(self) -> dict[str, Any]:
        """The spec as a run folder records it (``manifest.json``, ``config.yaml``): every
        field but :data:`RUNTIME_FIELDS`, so no absolute path and no run-time flag."""
        from chronobench.paths import portable

        out = self.model_dump(mode="json", exclude=set(RUNTIME_FIELDS))
        if out["dataset"].get("subset") is None:  # published files of full runs unchanged
            out["dataset"].pop("subset", None)
        for key in ("source", "queries_file"):
            out["dataset"][key] = portable(out["dataset"][key])
        _add_summary_limit(out["backbone"], self.backbone)
        _add_meaning(out["retriever"], self.retriever)
        return out

    # ---- identity -------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """What the cell computes: the spec without paths, verbosity and file locations
        (the dataset's content is covered by its manifest sha256, a query file's by its
        own sha256, both added by :func:`run_id`)."""
        dataset = self.dataset.model_dump(mode="json", exclude={"source", "queries_file"})
        dataset = drop_identity_defaults("dataset", dataset)
        ident: dict[str, Any] = {
            "spec_version": SPEC_VERSION,
            "dataset": dataset,
            "task": self.task.model_dump(mode="json"),
            "seed": self.seed,
            "embedder": self.embedder.model_dump(mode="json"),
            "retriever": self.retriever.model_dump(mode="json"),
            "reranker": self.reranker.model_dump(mode="json"),
        }
        _add_meaning(ident["retriever"], self.retriever)
        if self.task.selection:
            ident["selectors"] = list(self.selectors)
        if self.store.backend != "sqlite":  # absent for SQLite: published run ids unchanged
            ident["store"] = self.store.backend
        if self.task.generates or self.dataset.paraphrase or self.task.kind != "benchmark":
            ident["backbone"] = self.backbone.identity()
            _add_summary_limit(ident["backbone"], self.backbone)
        if self.task.generates or self.task.kind != "benchmark":
            ident["system"] = self.system.model_dump(mode="json")
        return ident

    def table_key(self) -> dict[str, Any]:
        """The leaderboard key: the identity without what a table compares (system,
        selectors, backbone: rows and columns) and without which parts a cell scored."""
        ident = self.identity()
        for k in ("system", "selectors", "backbone"):
            ident.pop(k, None)
        task = dict(ident["task"])
        for k in ("selection", "qa", "summary"):
            task.pop(k, None)
        ident["task"] = task
        return ident

    @property
    def published(self) -> bool:
        """Whether runs of this spec may reach the published leaderboard (not a test
        fixture, not a debugging cut of the data: ``dataset.limit_*`` or a truthy
        ``task.params.limit_*``)."""
        d = self.dataset
        # Other task kinds mark debugging cuts with task.params "limit_*" keys.
        cut = any(str(k).startswith("limit") and v for k, v in self.task.params.items())
        other_store = self.store.backend != "sqlite"  # needs a server a clone does not have
        return not (d.fixture or d.limit_streams or d.limit_queries or cut or other_store)

    def describe(self) -> str:
        """``locomo-session task=selection system=... backbone=...`` for console lines."""
        parts = [f"{self.dataset.name}-{self.dataset.granularity}", f"task={self.task.tag}"]
        if self.task.generates:
            parts += [f"system={self.system.name}", f"backbone={self.backbone.name}"]
            if self.resolver != "none":
                parts.append(f"resolver={self.resolver}")
        if self.dataset.queries_file:
            parts.append(f"queries={self.dataset.queries_file}")
        if self.store.backend != "sqlite":
            parts.append(f"store={self.store.backend}")
        return " ".join(parts)


def spec_sha256(spec: RunSpec) -> str:
    """sha256 of the spec's canonical identity."""
    return sha256_text(canonical_json(spec.identity()))


# The system protocol runs are made under (chronobench.protocols documents it). 1: systems
# received the whole RollbackQuery, gold included; 2: the sealed protocol (public writes,
# request text, question texts; the gold target only through the oracle channel); 3: one
# question battery per stream and a known set no system chooses (docs/protocol.md).
PROTOCOL_VERSION = 3


def _add_summary_limit(dumped: dict[str, Any], backbone: BackboneSpec) -> None:
    """Put the summaries' own token limit, when one is set, back into a dumped backbone."""
    limit = backbone.generation.summary_max_new_tokens
    if limit is not None:
        dumped.setdefault("generation", {})["summary_max_new_tokens"] = limit


def _add_meaning(dumped: dict[str, Any], retriever: RetrieverSpec) -> None:
    """Put the meaning stage's model, when one is set, back into a dumped retriever."""
    if retriever.meaning is not None:
        dumped["meaning"] = retriever.meaning
        if retriever.meaning_runtime is not None:
            dumped["meaning_runtime"] = retriever.meaning_runtime


def run_id(spec: RunSpec, dataset_sha256: str, queries_sha256: str | None = None) -> str:
    """``<dataset>-<granularity>[+<query file>]__<system>__<backbone>__<task>__<hash>``.

    Stable, so rerunning the same cell on the same data resumes it; the hash covers the
    spec's identity, the dataset manifest, the user query file's bytes and the system
    protocol, so an edited query file, a rebuilt dataset or a run of an older protocol
    never resumes stale samples.
    """
    from pathlib import Path

    d = spec.dataset
    head = f"{d.name}-{d.granularity}"
    if d.queries_file:
        head += "+" + Path(d.queries_file).stem
    parts = [head]
    if spec.task.generates:
        model = spec.backbone.model.split("/")[-1]
        system = spec.system.name + ("+resolver" if spec.resolver != "none" else "")
        parts += [system, f"{spec.backbone.name}-{model}"]
    elif spec.task.kind != "benchmark":
        parts.append(spec.system.name)
    else:
        parts.append("selection")
    blob = canonical_json(
        {
            "spec": spec_sha256(spec),
            "dataset_manifest_sha256": dataset_sha256,
            "queries_sha256": queries_sha256,
            "protocol": PROTOCOL_VERSION,
        }
    )
    parts += [spec.task.tag, sha256_text(blob)[:10]]
    return "__".join(p.replace("/", "-").replace(" ", "") for p in parts)


# ---- building a spec from a composed config ------------------------------------------


def spec_from_config(
    cfg: Mapping[str, Any], *, choices: Mapping[str, str] | None = None
) -> RunSpec:
    """Validate the shape of a resolved config (a plain dict) into a :class:`RunSpec`.

    ``choices`` (group -> option, from Hydra's runtime choices) lets errors name the
    config file a bad key came from. Components are not resolved here: the runner
    does that (:func:`chronobench.runner.components.resolve_cell`).
    """
    try:
        return RunSpec.model_validate(dict(cfg))
    except ValidationError as exc:
        raise config_error(exc, RunSpec, choices) from None
