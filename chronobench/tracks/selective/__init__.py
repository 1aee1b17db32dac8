"""RQ4, selective forgetting (``task=selective``): forget what a request names, keep
the rest."""

from chronobench.published_ids import TASK_RECORDED
from chronobench.runner.task_kind import TaskKind

TRACK = TaskKind(
    run="chronobench.tracks.selective.run:run_selective_cell",
    check="chronobench.tracks.selective.run:check_spec",
    build="chronobench.tracks.selective.run:build_parts",
    params="chronobench.tracks.selective.run:SelectiveParams",
    recorded=TASK_RECORDED["selective"],
    board="chronobench.tracks.selective.board:selective_section",
    views="chronobench.tracks.selective.viewer:headline_rows",
    record="chronobench.tracks.selective.board:record_fields",
)
