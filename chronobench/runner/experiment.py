"""An experiment: composed Hydra config -> validated, resolved cells -> run folders.

Without an ``experiment=`` override the main job (``experiment=default``) runs, whatever
other overrides are given (``run progress=false`` is still the main job); one cell is
asked for explicitly with ``experiment=single``. An experiment's ``suite`` is a list of
cells (override lists composed on top of the same config); a user override that a cell
sets differently is an error naming the cell. Every cell's spec is validated and its
components resolved (a backbone's packages included) before the first cell starts.

Publishing the leaderboard afterwards is the ``run`` command's step
(:mod:`chronobench.commands.run`), not the runner's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chronobench.errors import ConfigError
from chronobench.paths import config_dir, user_config_dirs


def _key(override: str) -> str:
    return override.lstrip("+~").split("=", 1)[0]


def _value(override: str) -> str:
    return override.split("=", 1)[1] if "=" in override else ""


def settable(override: str) -> str:
    """``a.b=v`` as ``++a.b=v``. A config file leaves an option at its default by not
    naming it (the options model states the default), so a dotted key may be absent from
    the composed config; ``++`` sets it either way. A key nothing reads is still an error
    naming the valid keys: the spec's (:mod:`chronobench.spec`) or the component's options
    model's, when the cell is resolved. Root keys, groups, flags and ``+``/``~`` overrides
    are left as they are."""
    if override.startswith(("+", "~", "-")) or "=" not in override:
        return override
    key = _key(override)
    return override if "." not in key or key.startswith("hydra.") else "++" + override


def compose(overrides: Sequence[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The resolved config (no ``hydra`` node) and the group choices, as plain dicts.
    Must run inside a Hydra ``initialize_config_dir`` context."""
    from hydra import compose as hydra_compose
    from hydra.errors import HydraException
    from omegaconf import OmegaConf, open_dict
    from omegaconf.errors import OmegaConfBaseException

    try:
        cfg = hydra_compose(
            config_name="config",
            overrides=[settable(o) for o in overrides],
            return_hydra_config=True,
        )
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
        if first.startswith("Could not override"):
            first = _unknown_key_message(exc, first)
        if "Could not find" in first:
            first = _missing_option_message(first, overrides)
        shown = [o for o in overrides if _key(o) != "hydra.searchpath"]
        raise ConfigError(f"overrides {' '.join(shown)}: {first}") from None
    return resolved, choices  # type: ignore[return-value]


_LIST_KINDS = {"experiment": "presets", "system": "systems", "dataset": "datasets",
               "task": "tracks", "backbone": "backbones"}  # fmt: skip


def _missing_option_message(first: str, overrides: Sequence[str]) -> str:
    """Hydra's "Could not find 'system/chronmem'" with the closest option of the group
    and where the options are listed."""
    import re

    from chronobench.config_catalog import closest_option

    found = re.search(r"Could not find '([\w/]+)/([^'/]+)'", first)
    if not found:
        return first + f" ({_OWN_CONFIGS})"
    group, given = found.groups()
    searched = [
        m for o in overrides if _key(o) == "hydra.searchpath"
        for m in re.findall(r"file://([^',\]]+)", o)
    ]  # fmt: skip
    close = closest_option(group, given, searched)
    guess = f"did you mean {group}={close}? " if close else ""
    listed = _LIST_KINDS.get(group)
    where = f"`python -m chronobench list {listed}` lists them; " if listed else ""
    return f"{group}={given} is not an option of {group!r}; {guess}{where}{_OWN_CONFIGS}"


_OWN_CONFIGS = (
    "configs of your own or of a plug-in: run --config-dir DIR or $CHRONOBENCH_CONFIG_PATH, "
    "see docs/plugins.md"
)


def _unknown_key_message(exc: Exception, first: str) -> str:
    """Hydra's "Could not override 'a.b'." with the keys that node does have (closest
    first) and Hydra's own advice for adding a new key."""
    from chronobench.errors import valid_keys_hint

    cause = exc.__cause__ or exc.__context__
    full_key = str(getattr(cause, "full_key", "") or "")
    parent = getattr(cause, "parent_node", None)
    out = first.rstrip(".")
    if full_key and parent is not None and hasattr(parent, "keys"):
        of, _, leaf = full_key.rpartition(".")
        valid = [str(k) for k in parent if of or k != "hydra"]
        hint = valid_keys_hint(leaf, valid, of=of or "the config")
        if hint:
            out += f": {hint}"
    # Hydra's second line: "To append to your config use +a.b=value".
    append = [line for line in str(exc).splitlines() if line.startswith("To append")]
    if append:
        out += f"; a key the config lacks is added with a leading +: {append[0].split()[-1]}"
    return out


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
        return [compose([*base, *user])]
    _check_clashes(cells, user)
    out = []
    for cell in cells:
        keys = {_key(o) for o in cell}
        resolved, choices = compose([*base, *[o for o in user if _key(o) not in keys], *cell])
        resolved["suite"] = []
        out.append((resolved, choices))
    return out


def with_config_path(args: Sequence[str], config_dirs: Sequence[str | Path] = ()) -> list[str]:
    """``args`` plus the Hydra search path of the user's config folders (``config_dirs``,
    then ``$CHRONOBENCH_CONFIG_PATH``; :func:`chronobench.paths.user_config_dirs`)."""
    dirs = user_config_dirs(config_dirs)
    if not dirs:
        return list(args)
    if any(_key(a) == "hydra.searchpath" for a in args):
        raise ConfigError(
            "hydra.searchpath is set by --config-dir and $CHRONOBENCH_CONFIG_PATH; give the "
            "folders there instead"
        )

    def quoted(path: Path) -> str:
        text = f"file://{path}".replace("\\", "\\\\").replace("'", "\\'")
        return f"'{text}'"

    override = f"hydra.searchpath=[{','.join(quoted(d) for d in dirs)}]"
    # Beside the other overrides: Hydra's own parser (multirun, --cfg) wants them together.
    at = next((i for i, a in enumerate(args) if "=" in a and not a.startswith("-")), len(args))
    return [*args[:at], override, *args[at:]]


def with_default_experiment(args: Sequence[str]) -> list[str]:
    """Prepend ``experiment=default`` unless an override names an experiment."""
    if any(_key(a) == "experiment" for a in args if not a.startswith("-")):
        return list(args)
    return ["experiment=default", *args]


def prepare_cells(cfg: Mapping[str, Any], user_overrides: Sequence[str]) -> list[Any]:
    """Every cell of ``cfg``'s suite, validated and resolved
    (:class:`~chronobench.runner.components.Components`), before any work."""
    from chronobench.runner.components import resolve_cell
    from chronobench.spec import spec_from_config

    return [
        resolve_cell(spec_from_config(c, choices=ch), choices=ch)
        for c, ch in expand_suite(cfg, user_overrides)
    ]


def check_store_servers(cells: Sequence[Any]) -> None:
    """Connect once to each PostgreSQL server the cells' stores use, before any work: a
    stopped server or a wrong URL is a short error naming the URL (never its password)
    and the fix, not a failure in the middle of the first cell."""
    urls = sorted(
        {c.spec.store.url for c in cells if c.spec.store.backend == "postgres" and c.spec.store.url}
    )
    if not urls:
        return
    from chronomem.pg.conn import connect_raw, describe_url, driver_message
    from chronomem.types import StoreConnectionError

    for url in urls:
        try:
            connect_raw(url, None, 10_000, "chronobench-check").close()
        except StoreConnectionError as exc:
            why = driver_message(exc.__cause__ or exc, url)
            raise ConfigError(
                f"config key 'store.url': cannot connect to PostgreSQL at {describe_url(url)} "
                f"({why}); start the server, or point store.url=... or $CHRONOBENCH_PG_URL at "
                "a running one: postgresql://user@host:port/db, the password in ~/.pgpass or "
                "$PGPASSWORD rather than the URL"
            ) from None


def check_backbone_servers(cells: Sequence[Any]) -> None:
    """Ask each server a served backbone (one whose registry entry names a
    ``server_problem`` check, such as ``openai``) talks to whether it is up, before any
    work: no server is a two-line error naming the URL and the fix, and no run folder."""
    import importlib

    seen: set[str] = set()
    for cell in cells:
        entry, options = cell.backbone.entry, cell.backbone.options
        target = entry.meta.get("server_problem")
        key = f"{entry.name} {sorted(options.items())!r}"
        if not target or key in seen:
            continue
        seen.add(key)
        entry.check_available()  # the check itself needs the backbone's packages
        module, _, attr = str(target).partition(":")
        problem = getattr(importlib.import_module(module), attr)(options)
        if problem:
            raise ConfigError(
                f"backbone={entry.name}: {problem}; start the server, or point "
                f"backbone.params.base_url=... at a running one (or use backbone=extractive)"
            )


def run_experiment(cfg: Mapping[str, Any], user_overrides: Sequence[str]) -> list[Path]:
    """Validate and resolve every cell (and every user query file against its data),
    then run them in order, or ``jobs`` at a time in worker processes
    (:mod:`chronobench.runner.parallel`); returns the run folders in suite order."""
    from chronobench.runner import progress, usage
    from chronobench.runner.parallel import local_models, resolve_jobs, run_parallel
    from chronobench.runner.query_files import validate_query_files

    with usage.phase("resolve cells"):
        cells = prepare_cells(cfg, user_overrides)
        check_store_servers(cells)
        check_backbone_servers(cells)
    jobs = resolve_jobs(cfg.get("jobs", 1), len(cells))
    models = local_models(cells) if cfg.get("jobs", 1) == "auto" and jobs > 1 else []
    if models:
        jobs = 1
        print(
            f"jobs=auto: one cell at a time, since backbone {', '.join(models)} "
            "loads a model into this machine per worker (give jobs=N to run N at once)",
            flush=True,
        )
    if jobs == 1:
        with usage.phase("query files"):
            validate_query_files(cells)  # run_parallel checks them in its workers
    results_dir = Path(cells[0].spec.paths.results_dir).resolve()
    at_once = f", {jobs} at a time" if jobs > 1 else ""
    print(
        f"chronobench run: {len(cells)} cell(s){at_once}; results under {results_dir}",
        flush=True,
    )
    t_all = time.perf_counter()
    with progress.cells(len(cells), enabled=bool(cfg.get("progress", True))) as shown:
        if jobs > 1:
            folders = run_parallel(cells, jobs, shown)
            print(f"chronobench run: {len(cells)} cell(s) in {time.perf_counter() - t_all:.1f} s")
            return folders
        with usage.phase("cells"):
            folders = _run_in_order(cells, shown)
    print(f"chronobench run: {len(cells)} cell(s) in {time.perf_counter() - t_all:.1f} s")
    return folders


def _run_in_order(cells: Sequence[Any], shown: Any) -> list[Path]:
    """Run ``cells`` one after another in this process (``jobs=1``)."""
    from chronobench.runner import cell as cell_module
    from chronobench.runner import progress, usage

    folders = []
    for i, cell in enumerate(cells, start=1):
        print(f"[{i}/{len(cells)}] {cell.describe()}", flush=True)
        shown.start(cell.describe())
        t = time.perf_counter()
        # Looked up at call time, so an instrumented run_cell (bench main) is the one run.
        folder, used = usage.measured(cell_module.run_cell, cell)
        usage.cell(cell.describe(), used)
        folders.append(folder)
        shown.finish()
        print(f"[{i}/{len(cells)}] wrote {folder} ({progress.took(t, shown)})", flush=True)
    return folders


def run_overrides(
    overrides: Sequence[str], config_dirs: Sequence[str | Path] = ()
) -> tuple[dict[str, Any], list[Path]]:
    """Compose ``overrides`` (with the default experiment unless one is named, and the
    user's config folders on the search path) and run the experiment; returns the
    composed config and the run folders."""
    from hydra import initialize_config_dir

    args = with_config_path(with_default_experiment(list(overrides)), config_dirs)
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg, _ = compose(args)
        return cfg, run_experiment(cfg, args)
