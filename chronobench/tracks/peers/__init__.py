"""The memory-systems track (``task=peers``): peer adapters and ChronoMem behind one
interface."""

from chronobench.published_ids import TASK_RECORDED
from chronobench.runner.task_kind import TaskKind

TRACK = TaskKind(
    run="chronobench.tracks.peers.run:run_peers_cell",
    check="chronobench.tracks.peers.run:check_spec",
    build="chronobench.tracks.peers.run:build_parts",
    params="chronobench.tracks.peers.run:PeersParams",
    recorded=TASK_RECORDED["peers"],
    board="chronobench.tracks.peers.board:peers_section",
    views="chronobench.tracks.peers.viewer:headline_rows",
    plots="chronobench.tracks.peers.viewer:fidelity_plots",
    details="chronobench.tracks.peers.viewer:run_details",
    # The preset runs on the first 4 conversations only (docs/peers.md): its figures
    # are not the same system's on the full set.
    subset=" (peers subset)",
)
