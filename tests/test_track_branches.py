"""The runner, the leaderboard and the viewer loop over the registered tracks: none of
them names a track to decide what to do (a track's own behaviour is a part of its
``TaskKind``, docs/tracks.md), so a new track needs no edit there."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT

SHARED = ("runner", "leaderboard", "viewer")

# A comparison of a task kind (or a dataset name) with a quoted name: ``kind == "peers"``,
# ``task_kind != "repair"``, ``dataset.startswith("repair")``. The registration lines
# (``TASKS.register("peers", ...)``) are names in a table, not branches, and do not match.
BRANCH = re.compile(
    r"""(?:kind\s*[!=]=\s*["'](?P<a>\w+)["'])|(?:\.startswith\(\s*["'](?P<b>\w+)["']\s*\))"""
)


def _tracks() -> set[str]:
    from chronobench.runner.components import TASKS

    return set(TASKS.names())


def test_no_shared_module_branches_on_a_track_name() -> None:
    tracks = _tracks()
    found = []
    for layer in SHARED:
        for path in sorted((REPO_ROOT / "chronobench" / layer).rglob("*.py")):
            for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for m in BRANCH.finditer(line):
                    if (m.group("a") or m.group("b")) in tracks:
                        found.append(f"{path.relative_to(REPO_ROOT)}:{no}: {line.strip()}")
    assert not found, "move these into the track's TaskKind:\n" + "\n".join(found)


def test_the_track_parts_reach_the_viewer_and_the_board() -> None:
    from chronobench.runner.components import TASKS
    from chronobench.runner.task_kind import as_task_kind

    kinds = {name: as_task_kind(TASKS.entry(name).load()) for name in ("peers", "repair")}
    assert kinds["peers"].subset and kinds["peers"].plots is not None
    assert kinds["repair"].cases and kinds["repair"].record is not None
    assert as_task_kind(TASKS.entry("benchmark").load()).record_fields(object()) == {}
