"""The echo track's line of the viewer's headline table."""

from __future__ import annotations

from chronobench.viewer.collect import Build
from chronobench.viewer.summary import Row, Stat


def echo_rows(build: Build) -> list[Row]:
    return [
        Row(
            "Echo track: streams",
            "echo",
            Stat(float(r.metrics["track"]["streams"])),
            None,
            r.run_id,
        )  # fmt: skip
        for r in build.runs
        if r.kind == "echo"
    ]
