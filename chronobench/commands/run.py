"""``python -m chronobench run [overrides...]``: run an experiment, then publish.

The runner (:mod:`chronobench.runner.experiment`) validates every cell and runs them.
Then, when the run publishes (:func:`publishes`) and ``leaderboard`` is not false, the
leaderboard is rebuilt with the cells just run
(:func:`chronobench.leaderboard.build.publish_after_run`). Publishing is the only step
that writes committed files (``results/LEADERBOARD.*``, ``results/published/``): the main
job and the named experiment presets publish (their config sets ``publish: true``);
``experiment=single``, ``smoke``, ``debug`` and any ad-hoc run write only their run
folders unless ``publish=true`` is given.

``--config-dir DIR`` (repeatable) and ``$CHRONOBENCH_CONFIG_PATH`` (folders separated by
``os.pathsep``) add folders of user or plug-in configs to the search path, after
``configs/`` (docs/plugins.md): ``run --config-dir my_configs system=my_system``.

``--profile`` prints, after the run, wall and CPU seconds and peak resident memory per
phase and per cell and the whole job's CPU / (CPUs x wall) (:mod:`chronobench.runner.usage`);
``bench main-job`` runs the main job so from empty caches.

Plain runs compose the config with Hydra's compose API (so errors stay short); ``-m`` /
``--multirun`` and Hydra's own flags (``--cfg``, ``--info``, ...) go through
``hydra.main`` so sweeps and launchers (joblib, submitit) work as usual.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chronobench.paths import config_dir


def publishes(cfg: Mapping[str, Any]) -> bool:
    """Whether a run of the composed config ``cfg`` writes committed files: its
    ``publish`` key (true in the main job and the named presets, false otherwise), unless
    its backbone's answers mean nothing (``backbone=export`` only records the prompts)."""
    from chronobench.backbones.registry import BACKBONES

    name = (cfg.get("backbone") or {}).get("name")
    if name in BACKBONES.names() and BACKBONES.entry(name).meta.get("publishes") is False:
        return False
    return bool(cfg.get("publish", False))


def run_and_publish(cfg: Mapping[str, Any], overrides: Sequence[str]) -> list[Path]:
    """Run the experiment's cells, then, if the run publishes, rebuild the leaderboard
    with them."""
    from chronobench.runner.experiment import run_experiment

    folders = run_experiment(cfg, overrides)
    if not folders:
        return folders
    results_dir = Path(cfg["paths"]["results_dir"]).resolve()
    if cfg.get("leaderboard", True) and publishes(cfg):
        from chronobench.leaderboard.build import publish_after_run
        from chronobench.runner import usage

        with usage.phase("leaderboard"):
            publish_after_run(results_dir, {f.name for f in folders})
    elif cfg.get("leaderboard", True):
        print(
            "not published: only the main job and the named experiment presets write "
            "results/LEADERBOARD.* and results/published/ (add publish=true to publish "
            "these runs, or run `python -m chronobench leaderboard` later)"
        )
    print(view_hint(results_dir))
    return folders


def view_hint(results_dir: Path) -> str:
    """The command that shows these runs, and where its site goes."""
    from chronobench.paths import results_dir as default_results

    given = "" if Path(default_results()).resolve() == results_dir else f" --results {results_dir}"
    site = results_dir / "site" / "index.html"
    return f"see the results: python -m chronobench view{given}  (writes {site})"


def _hydra_task(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from chronobench.errors import is_expected

    hydra_cfg = HydraConfig.get()
    # Every cell is composed again: it needs the user config folders too.
    search = [o for o in hydra_cfg.overrides.hydra if o.startswith("hydra.searchpath=")]
    overrides = [*search, *hydra_cfg.overrides.task]
    try:
        run_and_publish(OmegaConf.to_container(cfg, resolve=True), overrides)  # type: ignore[arg-type]
    except Exception as exc:
        import os

        if is_expected(exc) and os.environ.get("CHRONOBENCH_DEBUG") != "1":
            print(f"chronobench run: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        raise


def _uses_hydra_main(args: Sequence[str]) -> bool:
    return any(a.startswith("-") for a in args)


def split_config_dirs(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(--config-dir folders, the other arguments)``; ``--config-dir DIR`` and
    ``--config-dir=DIR`` may repeat."""
    from chronobench.errors import ConfigError

    dirs: list[str] = []
    rest: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg == "--config-dir":
            value = next(it, None)
            if value is None or value.startswith("-"):
                raise ConfigError("--config-dir needs a folder: run --config-dir DIR ...")
            dirs.append(value)
        elif arg.startswith("--config-dir="):
            dirs.append(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    return dirs, rest


def short_help(config_dirs: Sequence[str] = ()) -> str:
    """``run --help``: the usage, one line per preset and where the rest is."""
    from chronobench.config_catalog import group_options

    presets = group_options("experiment", config_dirs)
    width = max((len(o.name) for o in presets), default=0)
    rows = "\n".join(f"  {o.name:<{width}}  {o.summary}".rstrip() for o in presets)
    return f"""usage: python -m chronobench run [experiment=NAME] [key=value ...] [-m] [--config-dir DIR]
                              [--profile]

Runs an experiment: the main job (experiment=default) unless an override names another
preset. Overrides are Hydra's: pick a config with group=option (system=rag_only), set a
key with key=value (system.top_k_items=4), sweep with -m (system=chronomem,rag_only).

presets (experiment=NAME):
{rows}

more: `python -m chronobench list` (systems, datasets, tracks, presets, backbones);
`python -m chronobench run --hydra-help` (Hydra's own help: every group and flag);
--profile: wall and CPU seconds and peak memory per phase and cell; docs/commands.md."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run an experiment; ``argv`` are Hydra overrides (and optionally Hydra flags, and
    ``--config-dir DIR`` folders of user configs)."""
    from chronobench.runner import usage
    from chronobench.runner.experiment import (
        compose,
        settable,
        with_config_path,
        with_default_experiment,
    )

    usage.start()
    dirs, given = split_config_dirs(list(sys.argv[1:] if argv is None else argv))
    profile = "--profile" in given
    given = [a for a in given if a != "--profile"]
    if any(a in ("-h", "--help") for a in given):
        print(short_help(dirs))
        return 0
    # Hydra's own (long) help page, under a name of its own.
    given = ["--help" if a == "--hydra-help" else a for a in given]
    args = with_config_path(with_default_experiment(given), dirs)
    cdir = str(config_dir())
    if _uses_hydra_main(args):
        import hydra

        app = hydra.main(config_path=cdir, config_name="config", version_base="1.3")(_hydra_task)
        saved = sys.argv
        sys.argv = ["chronobench run", *(settable(a) for a in args)]
        try:
            app()
        finally:
            sys.argv = saved
        return 0
    from hydra import initialize_config_dir

    # Library INFO chatter (model loading) stays off the console, as under hydra.main.
    logging.basicConfig(level=logging.WARNING)
    with initialize_config_dir(config_dir=cdir, version_base="1.3"):
        with usage.phase("compose"):
            cfg, _ = compose(args)
        run_and_publish(cfg, args)
    if profile:
        print(usage.report(), flush=True)
    return 0
