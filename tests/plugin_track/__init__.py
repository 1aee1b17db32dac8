"""A track from outside chronobench, as a plug-in writes one: this folder plus one entry
point (``echo = "tests.plugin_track:TRACK"`` in the ``chronobench.tracks`` group).

Its cell counts the streams of its dataset; its board section and its viewer line show
that count. tests/test_plugin_track.py installs the entry point and runs it end to end.
"""

from chronobench.runner.task_kind import TaskKind

TRACK = TaskKind(
    run="tests.plugin_track.run:run_echo_cell",
    board="tests.plugin_track.board:echo_section",
    views="tests.plugin_track.viewer:echo_rows",
)
