"""``python -m chronobench run [overrides...]``: Hydra entry point.

With no arguments it runs ``experiment=default`` (the main job). Any Hydra syntax works:
``run system=rag_only backbone=vllm_qwen25_7b``, ``run -m system=chronomem,rag_only``,
``run experiment=smoke``, ``run --cfg job``. An experiment with a ``suite`` runs each
cell (a list of overrides composed on top of the same config) in turn, then rebuilds the
leaderboard.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


def _key(override: str) -> str:
    return override.lstrip("+~").split("=", 1)[0]


def expand_suite(cfg: Any, user_overrides: Sequence[str]) -> list[dict[str, Any]]:
    """Resolved configs of every cell: the user's overrides, then the cell's own."""
    from hydra import compose
    from omegaconf import OmegaConf

    cells = list(cfg.suite or [])
    if not cells:
        return [OmegaConf.to_container(cfg, resolve=True)]
    out = []
    for cell in cells:
        cell = [str(o) for o in cell]
        keys = {_key(o) for o in cell}
        base = [o for o in user_overrides if _key(o) not in keys]
        composed = compose(config_name="config", overrides=base + cell)
        resolved = OmegaConf.to_container(composed, resolve=True)
        resolved["suite"] = []
        out.append(resolved)
    return out


def _task(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig

    from chronobench.runner.cell import run_cell

    user_overrides = list(HydraConfig.get().overrides.task)
    cells = expand_suite(cfg, user_overrides)
    print(f"chronobench run: {len(cells)} cell(s)")
    for i, cell in enumerate(cells, start=1):
        print(
            f"[{i}/{len(cells)}] {cell['dataset']['name']}-{cell['dataset']['granularity']} "
            f"task={'+'.join(k for k in ('selection', 'qa', 'summary') if cell['task'].get(k))} "
            f"system={cell['system']['name']} backbone={cell['backbone']['name']}"
        )
        run_cell(cell)
    if cfg.leaderboard:
        from chronobench.leaderboard import write_leaderboard

        md = write_leaderboard(Path(cfg.paths.results_dir))
        print(f"leaderboard written: {md}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run Hydra with ``argv`` as its command line."""
    import hydra

    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        args = ["experiment=default"]
    app = hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")(_task)
    saved = sys.argv
    sys.argv = ["chronobench run", *args]
    try:
        app()
    finally:
        sys.argv = saved
    return 0
