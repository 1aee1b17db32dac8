"""The section's speed file (:data:`SPEED_FILE`): tokens per second and wall time of its
runs.

Speed changes on every rerun and every machine, while the board must rebuild byte for
byte from the published runs. So speed never enters the board: it is written to a file
of its own beside it, linked from the section and left out of every byte comparison.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chronobench.leaderboard.tables import md_table

SPEED_FILE = "LLM_CPU_SPEED.md"


def write_speed(results_dir: Path, runs: list[Any]) -> None:
    """``LLM_CPU_SPEED.md``: tokens per second and wall time of the section's runs, from
    their ``volatile.json`` (volatile: never byte-compared)."""
    from chronobench.fileio import atomic_write_text
    from chronobench.results.schema import VOLATILE_FILE

    rows = []
    for r in sorted(runs, key=lambda r: r.run_id):
        path = Path(r.folder) / VOLATILE_FILE
        if not path.is_file():
            continue
        vol = json.loads(path.read_text(encoding="utf-8"))
        calls = vol.get("backbone_calls") or {}
        secs = float(calls.get("generate_s") or 0.0)
        tokens = int(calls.get("prompt_tokens") or 0) + int(calls.get("completion_tokens") or 0)
        done = int(calls.get("completion_tokens") or 0)
        rows.append([
            f"`{r.run_id}`",
            str(calls.get("misses", "–")), str(calls.get("hits", "–")),
            f"{tokens / secs:.0f}" if secs else "–", f"{done / secs:.1f}" if secs else "–",
            f"{secs:.0f}", f"{float((vol.get('timings') or {}).get('total_s') or 0):.0f}",
        ])  # fmt: skip
    if not rows:
        return
    text = "\n".join(
        [
            "# Small language models on CPU: speed (volatile)",
            "",
            "Rewritten by `python -m chronobench leaderboard` from each run's `volatile.json`;",
            "it changes on every rerun and is never byte-compared. Generated = model calls",
            "(call-cache misses); cached = prompts answered from the call cache (shared",
            "between sessions and systems). Tokens per second count prompt and generated",
            "tokens over the seconds spent in the model; the cell's wall time includes",
            "retrieval, the known set and scoring.",
            "",
            *md_table(
                [
                    "run",
                    "generated",
                    "cached",
                    "tokens/s (prompt + new)",
                    "new tokens/s",
                    "model s",
                    "cell wall s",
                ],
                rows,
            ),  # fmt: skip
        ]
    )
    atomic_write_text(Path(results_dir) / SPEED_FILE, text.rstrip("\n") + "\n")
