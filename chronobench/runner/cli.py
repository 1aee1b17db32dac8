"""``python -m chronobench run [overrides...]``.

Without an ``experiment=`` override it runs ``experiment=default``, the main job,
whatever other overrides are given (``run progress=false`` is still the main job); one
cell is asked for explicitly with ``experiment=single``. An experiment's ``suite`` is a
list of cells (override lists composed on top of the same config); a user override that
a cell sets differently is an error naming the cell. Every cell's spec is validated,
and every backbone's packages checked, before the first cell starts.

Plain runs compose the config with Hydra's compose API (so errors stay short); ``-m`` /
``--multirun`` and Hydra's own flags (``--cfg``, ``--info``, ...) go through
``hydra.main`` so sweeps and launchers (joblib, submitit) work as usual.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chronobench.errors import ConfigError
from chronobench.paths import config_dir


def _key(override: str) -> str:
    return override.lstrip("+~").split("=", 1)[0]


def _value(override: str) -> str:
    return override.split("=", 1)[1] if "=" in override else ""


def _compose(overrides: Sequence[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The resolved config (no ``hydra`` node) and the group choices, as plain dicts."""
    from hydra import compose
    from hydra.errors import HydraException
    from omegaconf import OmegaConf, open_dict
    from omegaconf.errors import OmegaConfBaseException

    try:
        cfg = compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
        choices = {
            str(k): str(v)
            for k, v in OmegaConf.to_container(cfg.hydra.runtime.choices).items()
            if v is not None and not str(k).startswith("hydra/")
        }
        with open_dict(cfg):
            del cfg["hydra"]
        resolved = OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"overrides {' '.join(overrides)}: {first}") from None
    return resolved, choices  # type: ignore[return-value]


def _check_clashes(cells: list[list[str]], user: Sequence[str]) -> None:
    """A user override that a suite cell sets to another value is an error."""
    for i, cell in enumerate(cells, start=1):
        cell_vals = {_key(o): _value(o) for o in cell}
        for o in user:
            k = _key(o)
            if k in cell_vals and cell_vals[k] != _value(o):
                raise ConfigError(
                    f"override {o!r} disagrees with suite cell {i} [{', '.join(cell)}], which "
                    f"sets {k}={cell_vals[k]}; drop the override, or run one cell with "
                    f"experiment=single {' '.join(cell)} {o}"
                )


def expand_suite(
    cfg: Mapping[str, Any], user_overrides: Sequence[str]
) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """``(resolved config, group choices)`` of every cell: the user's overrides, then the
    cell's own. Must run inside a Hydra ``initialize_config_dir`` context."""
    cells = [[str(o) for o in cell] for cell in (cfg.get("suite") or [])]
    user = [o for o in user_overrides if _key(o) != "experiment"]
    base = [o for o in user_overrides if _key(o) == "experiment"]
    if not cells:
        return [_compose([*base, *user])]
    _check_clashes(cells, user)
    out = []
    for cell in cells:
        keys = {_key(o) for o in cell}
        resolved, choices = _compose([*base, *[o for o in user if _key(o) not in keys], *cell])
        resolved["suite"] = []
        out.append((resolved, choices))
    return out


def with_default_experiment(args: Sequence[str]) -> list[str]:
    """Prepend ``experiment=default`` unless an override names an experiment."""
    if any(_key(a) == "experiment" for a in args if not a.startswith("-")):
        return list(args)
    return ["experiment=default", *args]


def run_experiment(cfg: Mapping[str, Any], user_overrides: Sequence[str]) -> list[Path]:
    """Validate every cell, check backbones, run the cells, then rebuild the leaderboard."""
    from chronobench.runner.cell import run_cell
    from chronobench.runner.components import check_backbone_available
    from chronobench.runner.spec import spec_from_config

    _precheck_backbone(cfg)
    specs = [spec_from_config(c, choices=ch) for c, ch in expand_suite(cfg, user_overrides)]
    for spec in specs:
        check_backbone_available(spec)
    results_dir = Path(specs[0].paths.results_dir).resolve()
    print(f"chronobench run: {len(specs)} cell(s); results under {results_dir}", flush=True)
    folders = []
    t_all = time.perf_counter()
    for i, spec in enumerate(specs, start=1):
        print(f"[{i}/{len(specs)}] {spec.describe()}", flush=True)
        t = time.perf_counter()
        folder = run_cell(spec)
        folders.append(folder)
        print(f"[{i}/{len(specs)}] wrote {folder} ({time.perf_counter() - t:.1f} s)", flush=True)
    print(f"chronobench run: {len(specs)} cell(s) in {time.perf_counter() - t_all:.1f} s")
    if cfg.get("leaderboard", True):
        from chronobench.leaderboard.build import publish_after_run

        publish_after_run(results_dir, {f.name for f in folders})
    return folders


def _precheck_backbone(cfg: Mapping[str, Any]) -> None:
    """Before composing every cell (seconds): when no cell picks its own backbone and some
    cell generates, the base config's backbone must be importable."""
    from chronobench.backbones.registry import BACKBONES

    cells = [[str(o) for o in c] for c in (cfg.get("suite") or [])]
    if any(_key(o) == "backbone" for c in cells for o in c):
        return
    task = cfg.get("task") or {}
    gen_tasks = {"task=generation", "task=qa", "task=summary", "task=all"}
    generates = any(o in gen_tasks for c in cells for o in c) or (
        not cells and (task.get("qa") or task.get("summary"))
    )
    name = (cfg.get("backbone") or {}).get("name")
    if generates and name in BACKBONES:
        BACKBONES.check_available(name)


def _hydra_task(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from chronobench.errors import is_expected

    overrides = list(HydraConfig.get().overrides.task)
    try:
        run_experiment(OmegaConf.to_container(cfg, resolve=True), overrides)  # type: ignore[arg-type]
    except Exception as exc:
        import os

        if is_expected(exc) and os.environ.get("CHRONOBENCH_DEBUG") != "1":
            print(f"chronobench run: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        raise


def _uses_hydra_main(args: Sequence[str]) -> bool:
    return any(a.startswith("-") for a in args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run an experiment; ``argv`` are Hydra overrides (and optionally Hydra flags)."""
    args = with_default_experiment(list(sys.argv[1:] if argv is None else argv))
    cdir = str(config_dir())
    if _uses_hydra_main(args):
        import hydra

        app = hydra.main(config_path=cdir, config_name="config", version_base="1.3")(_hydra_task)
        saved = sys.argv
        sys.argv = ["chronobench run", *args]
        try:
            app()
        finally:
            sys.argv = saved
        return 0
    from hydra import initialize_config_dir

    # Library INFO chatter (model loading) stays off the console, as under hydra.main.
    logging.basicConfig(level=logging.WARNING)
    with initialize_config_dir(config_dir=cdir, version_base="1.3"):
        cfg, _ = _compose(args)
        run_experiment(cfg, args)
    return 0
