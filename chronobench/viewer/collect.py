"""The runs the viewer shows, and the groups that keep them apart.

Runs are read from ``<results>/published/`` and ``<results>/runs/`` (a local run wins
over its published copy, as for the leaderboard). A :class:`Build` is every run on one
source file (its sha256; a run of a track that builds its own cases, such as repair: its
case set, titled as the track names it, ``TaskKind.cases``): the tiny test fixture and the
real LoCoMo are different builds, each its own section of the site, and no chart or
table mixes two. Inside a build, runs on different built datasets (another granularity,
other build parameters, a subset) are kept apart by ``data_build`` (the built dataset's
manifest sha256) and by their number of requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronobench.results.per_query import QUERIES_FILE

PUBLISHED = "published"
LOCAL = "runs"


@dataclass
class ViewRun:
    """One finished run as the viewer shows it."""

    run_id: str
    folder: Path
    where: str  # "published" or "local"
    kind: str  # the task kind; a benchmark run's: "selection" (RQ1 only) or "generation"
    dataset: str
    granularity: str
    queries: str
    build: str  # the source file's sha256, short (a repair run: its case set's)
    data_build: str  # the built dataset's manifest sha256, short
    fixture: bool
    source: str  # the dataset's source file, or "" (the default download)
    system: str | None
    backbone: str | None
    params: dict[str, Any]
    metrics: dict[str, Any]
    n_queries: int | None = None
    subset: str = ""  # appended to the system's label (the track's ``TaskKind.subset``)
    cases: str | None = None  # the track's own data, by name (``TaskKind.cases``)
    # The track's own (title, block) sections of the run's page (``TaskKind.details``).
    details: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def query_file(self) -> Path | None:
        path = self.folder / QUERIES_FILE
        return path if path.is_file() else None


@dataclass
class Build:
    """Runs on one built dataset (see the module)."""

    key: str
    dataset: str
    fixture: bool
    source: str
    cases: str | None = None  # every run is of a track with its own cases, so named
    runs: list[ViewRun] = field(default_factory=list)

    @property
    def title(self) -> str:
        if self.cases is not None:
            return f"{self.cases} (build {self.key})"
        where = Path(self.source).name if self.source else "full download"
        text = f"{self.dataset} ({where}, source {self.key})"
        return f"{text}: test fixture, not a result" if self.fixture else text

    @property
    def slug(self) -> str:
        return f"{self.dataset}-{self.key}"


def _kind(task: Any, track: Any) -> str:
    """The task kind; a run of the main tables (the benchmark's) split by what it
    scored (RQ1 only, or generation)."""
    if track is None or not track.tables:
        return str(task.kind)
    return "selection" if task.selection and not task.generates else "generation"


def _track(kind: str) -> Any:
    """The registered :class:`~chronobench.runner.task_kind.TaskKind` of ``kind`` (None: a
    kind no longer registered, whose runs are still shown)."""
    from chronobench.runner.components import TASKS
    from chronobench.runner.task_kind import as_task_kind

    if kind not in TASKS:
        return None
    return as_task_kind(TASKS.entry(kind).load())


def _read(folder: Path, where: str) -> ViewRun | None:
    """One run folder through the typed results loader (None: not a readable run)."""
    from chronobench.errors import ResultsError
    from chronobench.results.schema import load_run

    try:
        run = load_run(folder)
    except (ResultsError, OSError, ValueError):
        return None
    spec, man = run.spec, run.manifest
    track = _track(str(spec.task.kind))
    kind = _kind(spec.task, track)
    metrics = run.metrics.metrics.to_json()
    ds, d = man.dataset, spec.dataset
    return ViewRun(
        run_id=man.run_id,
        folder=folder,
        where=where,
        kind=kind,
        dataset=d.name,
        granularity=d.granularity,
        queries=Path(d.queries_file).stem if d.queries_file else "built",
        build=str(ds.source_sha256 or ds.manifest_sha256 or "")[:8] or "?",
        data_build=str(ds.manifest_sha256 or "")[:8] or "?",
        fixture=bool(d.fixture),
        source=str(d.source or ""),
        system=spec.system.name if kind != "selection" else None,
        backbone=spec.backbone.name if kind != "selection" else None,
        params=dict(spec.task.params),
        metrics=metrics,
        n_queries=ds.n_queries,
        subset=track.subset if track is not None else "",
        cases=track.cases if track is not None else None,
        details=track.view_details(metrics) if track is not None else [],
    )


def collect(results_dir: Path) -> list[ViewRun]:
    """Every finished run under ``results_dir`` (published, then local: local wins)."""
    results_dir = Path(results_dir)
    by_id: dict[str, ViewRun] = {}
    for where, sub in (("published", PUBLISHED), ("local", LOCAL)):
        for folder in sorted((results_dir / sub).glob("*")):
            if (folder / "manifest.json").is_file() and (folder / "metrics.json").is_file():
                run = _read(folder, where)
                if run is not None:
                    by_id[run.run_id] = run
    return sorted(by_id.values(), key=lambda r: r.run_id)


def builds(runs: list[ViewRun]) -> list[Build]:
    """Runs by build: real data first (published before local-only), fixtures last."""
    out: dict[str, Build] = {}
    for r in runs:
        b = out.setdefault(r.build, Build(r.build, r.dataset, r.fixture, r.source, r.cases))
        b.runs.append(r)
        if r.cases is None and b.cases is not None:
            # One benchmark run makes it a benchmark build, named by its dataset.
            b.dataset, b.cases = r.dataset, None

    def order(b: Build) -> tuple[bool, bool, bool, int, str]:
        published = any(r.where == "published" for r in b.runs)
        return (b.fixture, b.cases is not None, not published, -len(b.runs), b.key)

    return sorted(out.values(), key=order)
