"""The benchmark (``task=benchmark``): RQ1 version selection, RQ2 RC-QA and RQ3 summaries
of one system on one dataset, in one cell (docs/metrics.md). Its runs are the rows of the
leaderboard's main tables; the audits of its headlines are in the rooms beside it
(:mod:`chronobench.tracks.selection`, :mod:`~chronobench.tracks.rcqa`,
:mod:`~chronobench.tracks.summary`)."""

from chronobench.runner.task_kind import TaskKind

TRACK = TaskKind(
    run="chronobench.runner.cell:run_benchmark_cell",
    build="chronobench.runner.cell:build_benchmark_parts",
    resolve="chronobench.runner.components:resolve_benchmark",
    tables=True,
    views="chronobench.tracks.benchmark.viewer:headline_rows",
)
