"""Dependency-guided repair: a second track of chronobench on the same store and backbone
protocol. Provenance graph (:mod:`~chronobench.tracks.repair.provenance`), tracing, support
check and planner (:mod:`~chronobench.tracks.repair.planner`), the agent and its offline policy
(:mod:`~chronobench.tracks.repair.agent`, :mod:`~chronobench.tracks.repair.policy`), repair methods
and baselines (:mod:`~chronobench.tracks.repair.methods`), metrics, the cell runner
(:mod:`~chronobench.tracks.repair.run`) and the leaderboard section
(:mod:`~chronobench.tracks.repair.report`). See docs/repair.md."""

from chronobench.published_ids import TASK_RECORDED
from chronobench.runner.task_kind import TaskKind

TRACK = TaskKind(
    run="chronobench.tracks.repair.run:run_repair_cell",
    check="chronobench.tracks.repair.run:check_spec",
    build="chronobench.tracks.repair.run:build_parts",
    params="chronobench.tracks.repair.run:RepairTaskParams",
    recorded=TASK_RECORDED["repair"],
    board="chronobench.tracks.repair.report:repair_section",
    views="chronobench.tracks.repair.viewer:headline_rows",
    cases="repair cases",
    record="chronobench.tracks.repair.report:record_fields",
)
