"""The results schema: what a run folder's ``manifest.json``, ``volatile.json`` and
``metrics.json`` hold.

Identity and volatility are kept apart. ``manifest.json`` holds what the run computed
(spec, data and query-file sha256, seed, sample counts and sha256): rerunning the same
cell with the same code gives it byte for byte, so a committed copy never changes on a
rerun. ``volatile.json`` holds :data:`VOLATILE_FIELDS`, what changes on every rerun
(code commit, timestamps, timings, cache hit counts, library versions); the leaderboard
shows none of it. Neither holds an absolute path or a run-time flag
(:data:`chronobench.spec.RUNTIME_FIELDS`).

Versioned and validated on read: a file that does not match says which file and what
to do. Schema 2.0 folders (volatile fields inside the manifest) and 1.0 folders (before
the typed RunSpec: spec rebuilt from ``config.yaml``, samples' sha256 computed from
``samples.jsonl``) still load.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chronobench.errors import ConfigError, ResultsError
from chronobench.hashing import file_sha256
from chronobench.results.metrics_file import MetricsFile
from chronobench.results.version import READABLE_VERSIONS, RESULTS_SCHEMA_VERSION
from chronobench.results.version import SchemaVersion as _Version
from chronobench.spec import RunSpec, spec_from_config, spec_sha256

MANIFEST_FILE = "manifest.json"
METRICS_FILE = "metrics.json"
SAMPLES_FILE = "samples.jsonl"
CONFIG_FILE = "config.yaml"
VOLATILE_FILE = "volatile.json"

#: The volatile fields of a run: what differs between two runs of the same cell with the
#: same code on the same data. They live in ``volatile.json`` only (the one list: the
#: README and the reproducibility test read it), never in ``manifest.json``, and the
#: leaderboard shows none of them.
#:
#: - ``finished_at``: when the run finished (UTC);
#: - ``git``: the code's commit and whether the tree was dirty;
#: - ``libraries``: installed versions of the libraries that can change a score, and Python's;
#: - ``timings``: seconds per stage;
#: - ``backbone_calls``: backbone calls, call-cache hits and misses, tokens sent (they
#:   depend on what the call cache already held);
#: - ``embedding_cache``: texts found in the embedding cache (memory, disk) or embedded.
VOLATILE_FIELDS = (
    "finished_at",
    "git",
    "libraries",
    "timings",
    "backbone_calls",
    "embedding_cache",
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetInfo(_Model):
    folder: str
    manifest_sha256: str
    source_sha256: str | None = None
    queries_sha256: str | None = None
    n_streams: int
    n_queries: int


class SamplesInfo(_Model):
    file: str = SAMPLES_FILE
    sha256: str | None
    n: int
    selection: int
    probes: int


class Manifest(_Model):
    """``manifest.json``: the run's identity (byte-stable across reruns of the same code)."""

    schema_version: _Version = RESULTS_SCHEMA_VERSION
    run_id: str
    # The system protocol the run was made under (chronobench.protocols.PROTOCOL_VERSION);
    # manifests written before it was recorded are protocol 1 (systems saw the gold).
    protocol: int = 1
    # The RunSpec without its run-time fields (RunSpec.recorded; validated by load_run).
    spec: dict[str, Any]
    spec_sha256: str
    # A flat summary of the spec for people and notebooks (dataset, granularity, system,
    # backbone, model, task, selectors, queries); the spec is authoritative.
    cell: dict[str, Any] = Field(default_factory=dict)
    # Whether the run may appear on the leaderboard (not a fixture or a debugging cut).
    published: bool
    seed: int
    dataset: DatasetInfo
    samples: SamplesInfo
    # Protocol 3: sha256 of the known set the run was scored with (known.json beside it;
    # chronobench.runner.known); None for runs without QA probes and older protocols.
    known_sha256: str | None = None
    # Set when the file was rewritten from an older schema (its samples are older code's).
    migrated_from: str | None = None


class Volatile(_Model):
    """``volatile.json``: the run's :data:`VOLATILE_FIELDS`."""

    schema_version: _Version = RESULTS_SCHEMA_VERSION
    run_id: str
    finished_at: str = ""
    git: dict[str, Any] = Field(default_factory=dict)
    libraries: dict[str, Any] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    backbone_calls: dict[str, Any] = Field(default_factory=dict)
    embedding_cache: dict[str, Any] = Field(default_factory=dict)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ResultsError(
            f"{path}: missing; a finished run folder has {MANIFEST_FILE} and {METRICS_FILE} "
            "(rerun the cell, or pass a folder such as results/runs/<run-id>)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: expected a JSON object")
    version = str(data.get("schema_version"))
    if version not in READABLE_VERSIONS:
        raise ResultsError(
            f"{path}: results schema_version {version!r} is not one this chronobench reads "
            f"({', '.join(READABLE_VERSIONS)}); rerun the cell with this version"
        )
    return data


def _validate(model: type[BaseModel], data: dict[str, Any], path: Path) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise ResultsError(
            f"{path}: field {key!r}: {err['msg']} ({len(exc.errors())} problem(s)); "
            "the file does not match results schema " + RESULTS_SCHEMA_VERSION
        ) from None


@dataclass(frozen=True)
class LoadedRun:
    """A finished run folder, validated: the leaderboard's and scorer's view of it."""

    folder: Path
    manifest: Manifest
    metrics: MetricsFile
    spec: RunSpec
    # Read from an older results schema (kept loadable and re-scorable, never published).
    migrated: bool = False
    # volatile.json (or, for a schema 2.0 folder, the volatile fields of its manifest).
    volatile: Volatile | None = None

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @property
    def finished_at(self) -> str:
        """When the run finished (volatile; "" when unknown)."""
        return self.volatile.finished_at if self.volatile is not None else ""


def _spec_from(data: dict[str, Any], path: Path) -> RunSpec:
    try:
        return spec_from_config(data)
    except ConfigError as exc:
        raise ResultsError(f"{path}: its spec does not validate: {exc}") from None


def _migrate_v1(folder: Path, man: dict[str, Any], met: dict[str, Any]) -> tuple[dict, dict]:
    """A schema 1.0 run (untyped config) -> the 2.0 shape."""
    import yaml

    cfg_path = folder / CONFIG_FILE
    if not cfg_path.is_file():
        raise ResultsError(f"{cfg_path}: missing; a schema 1.0 run needs it to rebuild its spec")
    cfg = yaml.safe_load(cfg_path.read_text(encoding="utf-8")) or {}
    system = dict(cfg.get("system") or {})
    system.pop("kind", None)  # 1.0 configs carried an unread system.kind
    cfg["system"] = system
    dataset = dict(cfg.get("dataset") or {})
    dataset.setdefault("fixture", "tests/fixtures/" in str(dataset.get("source") or ""))
    cfg["dataset"] = dataset
    task = dict(cfg.get("task") or {})
    task.setdefault("kind", "benchmark")
    cfg["task"] = task
    spec = _spec_from(cfg, cfg_path)

    samples = folder / SAMPLES_FILE
    counts = man.get("counts") or {}
    ds = man.get("dataset") or {}
    new_man = {
        "schema_version": "2.0",  # the 2.0 shape; load_run splits its volatile fields
        "run_id": man["run_id"],
        "spec": spec.model_dump(mode="json"),
        "spec_sha256": spec_sha256(spec),
        "cell": man.get("cell") or {},
        "published": spec.published,
        "finished_at": man.get("finished_at", ""),
        "git": man.get("git") or {},
        "libraries": man.get("libraries") or {},
        "seed": int(man.get("seed", 0)),
        "dataset": {
            "folder": str(ds.get("folder", "")),
            "manifest_sha256": str(ds.get("manifest_sha256", "")),
            "source_sha256": ds.get("source_sha256"),
            "queries_sha256": None,
            "n_streams": int(ds.get("n_streams", 0)),
            "n_queries": int(ds.get("n_queries", 0)),
        },
        "samples": {
            "sha256": file_sha256(samples) if samples.is_file() else None,
            "n": int(counts.get("samples", 0)),
            "selection": int(counts.get("selection", 0)),
            "probes": int(counts.get("probes", 0)),
        },
        "timings": man.get("timings") or {},
        "backbone_calls": man.get("backbone_calls") or {},
        "migrated_from": "1.0",
    }
    new_met = {**met, "schema_version": "2.0"}
    return new_man, new_met


def load_run(folder: Path) -> LoadedRun:
    """Read and validate a run folder (schema 1.0, 2.0 or 2.1)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ResultsError(
            f"{folder.resolve()}: no such run folder; list finished runs with "
            "`ls results/runs` (or the results_dir you ran with)"
        )
    man_path, met_path = folder / MANIFEST_FILE, folder / METRICS_FILE
    man, met = _read_json(man_path), _read_json(met_path)
    if man["schema_version"] == "1.0":
        man, met = _migrate_v1(folder, man, met)
    vol_path = folder / VOLATILE_FILE
    if man["schema_version"] == "2.0":
        # Schema 2.0 kept the volatile fields in the manifest: read into the 2.1 shape.
        legacy = {k: man.pop(k) for k in VOLATILE_FIELDS if k in man}
        man["schema_version"] = met["schema_version"] = RESULTS_SCHEMA_VERSION
        vol: dict[str, Any] | None = {
            **legacy,
            "schema_version": RESULTS_SCHEMA_VERSION,
            "run_id": man["run_id"],
        }
    else:
        vol = _read_json(vol_path) if vol_path.is_file() else None
    manifest = _validate(Manifest, man, man_path)
    metrics = _validate(MetricsFile, met, met_path)
    volatile = _validate(Volatile, vol, vol_path) if vol is not None else None
    spec = _spec_from(manifest.spec, man_path)
    migrated = manifest.migrated_from is not None
    return LoadedRun(
        folder=folder,
        manifest=manifest,
        metrics=metrics,
        spec=spec,
        migrated=migrated,
        volatile=volatile,
    )


def finished_at(folder: Path) -> str:
    """When the run in ``folder`` finished, from its volatile fields ("" when unknown);
    for readers that do not load the whole run."""
    folder = Path(folder)
    for path in (folder / VOLATILE_FILE, folder / MANIFEST_FILE):
        try:
            value = json.loads(path.read_text(encoding="utf-8")).get("finished_at")
        except (OSError, ValueError, AttributeError):
            continue
        if value:
            return str(value)
    return ""
