"""The echo track's leaderboard section."""

from __future__ import annotations

from typing import Any


def echo_section(runs: list[Any]) -> tuple[str, list[str]]:
    lines = ["## Echo track", "", "| run | streams |", "|---|---|"]
    for r in sorted(runs, key=lambda r: r.run_id):
        lines.append(f"| `{r.run_id}` | {(r.metrics.track or {}).get('streams')} |")
    return "\n".join(lines) + "\n", [r.run_id for r in runs]
