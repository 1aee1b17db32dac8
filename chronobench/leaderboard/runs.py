"""The finished runs the leaderboard reads: :class:`RunRecord` and where runs are found.

A run is read from ``results/runs/<run-id>/`` (local), ``results/published/<run-id>/``
(committed copies of the runs the leaderboard names) or
``results/archive/protocol-<n>/<run-id>/`` (published runs of an older system protocol).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronobench.errors import ResultsError
from chronobench.hashing import canonical_json
from chronobench.results.metrics_file import RunMetrics
from chronobench.results.schema import MANIFEST_FILE, METRICS_FILE, load_run
from chronobench.spec import PROTOCOL_VERSION

PUBLISHED_DIR = "published"
#: Embedder runtimes whose vectors do not depend on the CPU (chronobench.spec).
MACHINE_INDEPENDENT_RUNTIMES = ("torch_f64",)
ARCHIVE_DIR = "archive"


@dataclass(frozen=True)
class RunRecord:
    """A finished, published run as the leaderboard sees it."""

    run_id: str
    folder: Path
    task_kind: str
    table_key: str  # canonical JSON of spec.table_key()
    dataset: str
    granularity: str
    queries: str
    system: str | None
    backbone: str | None
    model: str | None
    finished_at: str
    samples_sha256: str | None
    metrics: RunMetrics
    published: bool
    protocol: int = 1
    # The board's "small language models on CPU" section: the spec's backbone
    # name whatever the task, its stated subset, and a repair run's method.
    backbone_name: str | None = None
    subset: dict[str, Any] | None = None
    repair_method: str | None = None
    # Which v* a turn-granularity run of a hand-written file scores against (the
    # dataset's turn_gold): the board names it, since the two golds differ by design.
    turn_gold: str = "session"

    @property
    def small_llm(self) -> bool:
        """A run of the section "small language models on CPU": a packaged model's
        backbone or a stated subset; never a row of the main tables."""
        from chronobench.backbones.packaged import PACKAGED

        return bool(self.subset) or self.backbone_name in PACKAGED

    embedder: str = "minilm@torch_f64"  # model@runtime of the cell's embedder
    # An RQ4 run's held-out request file (its stem) when the cell names one; None: the
    # default file, the RQ4 table's headline.
    heldout: str | None = None

    @property
    def machine_independent(self) -> bool:
        """Whether the run's figures can be the same on another CPU: its embedder is the
        hash one or the float64 grid runtime (docs/reproducibility.md). int8 onnxruntime
        and float32 torch vectors follow the CPU's kernels: such runs stay off the board."""
        model, _, runtime = self.embedder.rpartition("@")
        return model == "hash" or runtime in MACHINE_INDEPENDENT_RUNTIMES

    @property
    def current(self) -> bool:
        """Published under the current system protocol: a row of the leaderboard."""
        return self.published and self.protocol == PROTOCOL_VERSION

    @property
    def backbone_label(self) -> str:
        """The column: the backbone's registered label, else its model's name."""
        from chronobench.backbones.registry import BACKBONES

        if self.backbone in BACKBONES and BACKBONES.entry(self.backbone).label:
            return BACKBONES.entry(self.backbone).row_label
        return str(self.model).split("/")[-1] if self.model else str(self.backbone)

    @property
    def backbone_key(self) -> tuple[bool, float, str]:
        """The column's table position: the backbone's registered order, then the label."""
        from chronobench.backbones.registry import BACKBONES

        order = BACKBONES.entry(self.backbone).order if self.backbone in BACKBONES else None
        return (order is None, order if order is not None else 0.0, self.backbone_label)


def _record(folder: Path) -> RunRecord:
    run = load_run(folder)
    spec = run.spec
    d = spec.dataset
    return RunRecord(
        run_id=run.run_id,
        folder=folder,
        task_kind=spec.task.kind,
        # Runs over different built data or query files never share a table either.
        table_key=canonical_json(
            {
                **spec.table_key(),
                "dataset_manifest_sha256": run.manifest.dataset.manifest_sha256,
                "queries_sha256": run.manifest.dataset.queries_sha256,
            }
        ),
        dataset=d.name,
        granularity=d.granularity,
        queries=Path(d.queries_file).stem if d.queries_file else "built",
        # A run with ChronoMem's backbone resolver on is its own row, never merged.
        system=(spec.system.name + ("+resolver" if spec.resolver != "none" else ""))
        if spec.task.generates
        else None,
        backbone=spec.backbone.name if spec.task.generates else None,
        model=spec.backbone.model if spec.task.generates else None,
        finished_at=run.finished_at,  # volatile: orders runs, never shown
        samples_sha256=run.manifest.samples.sha256,
        metrics=run.metrics.metrics,
        # Runs of an older results schema were made by older code: never published.
        published=run.manifest.published and not run.migrated,
        protocol=run.manifest.protocol,
        backbone_name=spec.backbone.name,
        subset=d.subset.model_dump() if d.subset is not None else None,
        embedder=f"{spec.embedder.model}@{spec.embedder.runtime}",
        turn_gold=d.turn_gold,
        **_track_fields(spec),
    )


def _track_fields(spec: Any) -> dict[str, Any]:
    """What the run's track adds to its record (``TaskKind.record``; none for a kind no
    longer registered, whose runs are still read)."""
    from chronobench.runner.components import TASKS
    from chronobench.runner.task_kind import as_task_kind

    if spec.task.kind not in TASKS:
        return {}
    return as_task_kind(TASKS.entry(spec.task.kind).load()).record_fields(spec)


def collect_runs(
    results_dir: Path,
    *,
    local: bool = True,
    published: bool = True,
    warn: bool = True,
    only: set[str] | None = None,
) -> list[RunRecord]:
    """Finished runs under ``results_dir/runs`` (all, or the ids in ``only``) and/or
    ``results_dir/published`` (a run in both counts once). Unfinished folders are
    skipped; unreadable ones are reported."""
    folders: list[Path] = []
    if published:
        folders += sorted((results_dir / PUBLISHED_DIR).glob("*"))
    if local:
        folders += sorted(
            p for p in (results_dir / "runs").glob("*") if only is None or p.name in only
        )
    by_id: dict[str, RunRecord] = {}
    for folder in folders:
        if not (folder / MANIFEST_FILE).is_file() or not (folder / METRICS_FILE).is_file():
            continue
        try:
            rec = _record(folder)
        except ResultsError as exc:
            if warn:
                print(f"leaderboard: skipping {folder}: {exc}")
            continue
        by_id[rec.run_id] = rec  # local (read last) wins over its published copy
    return sorted(by_id.values(), key=lambda r: (r.finished_at, r.run_id))


def archived_runs(results_dir: Path) -> list[RunRecord]:
    """The runs under ``results_dir/archive/protocol-*/`` (older system protocols)."""
    out: list[RunRecord] = []
    for folder in sorted((Path(results_dir) / ARCHIVE_DIR).glob("protocol-*/*")):
        if (folder / MANIFEST_FILE).is_file() and (folder / METRICS_FILE).is_file():
            try:
                out.append(_record(folder))
            except ResultsError as exc:
                print(f"leaderboard: skipping archived {folder}: {exc}")
    return sorted(out, key=lambda r: (r.finished_at, r.run_id))
