"""``python -m chronobench list [systems|datasets|tracks|presets|backbones]``.

What a run can combine, one line each: the option's name (as ``run`` takes it:
``system=<name>``) and the first sentence of its config file. Read from the config
folders (``configs/``, ``--config-dir``, ``$CHRONOBENCH_CONFIG_PATH``), so plug-in
configs are listed too, and nothing heavier than the YAML files is loaded.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

# what the user types -> (config group, heading)
KINDS: dict[str, tuple[str, str]] = {
    "presets": ("experiment", "presets (run experiment=<name>)"),
    "systems": ("system", "systems (run ... system=<name>)"),
    "datasets": ("dataset", "datasets (run ... dataset=<name>)"),
    "tracks": ("task", "tracks and tasks (run ... task=<name>)"),
    "backbones": ("backbone", "backbones (run ... backbone=<name>)"),
}


def lines_for(kind: str, config_dirs: Sequence[str] = ()) -> list[str]:
    """The lines ``list KIND`` prints under its heading."""
    from chronobench.config_catalog import group_options

    group, _ = KINDS[kind]
    options = group_options(group, config_dirs)
    width = max((len(o.name) for o in options), default=0)
    if kind != "tracks":
        return [f"  {o.name:<{width}}  {o.summary}".rstrip() for o in options]
    # A task config names its track with `kind:` (the benchmark when absent); the
    # benchmark's tasks pick which of RQ1-RQ3 a cell scores.
    out = []
    for o in options:
        track = _track_of(o.path)
        what = o.summary or f"the benchmark's {o.name} part"
        out.append(f"  {o.name:<{width}}  [{track}] {what}".rstrip())
    return out


def _track_of(path) -> str:  # noqa: ANN001 - a pathlib.Path
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return str(data.get("kind") or "benchmark") if isinstance(data, dict) else "benchmark"


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry."""
    parser = argparse.ArgumentParser(
        prog="chronobench list",
        description="List what a run can select: "
        + ", ".join(KINDS)
        + " (all of them when none is named).",
    )
    parser.add_argument("what", nargs="*", metavar="KIND", help=" | ".join(KINDS))
    parser.add_argument(
        "--config-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of your own or a plug-in's configs (as `run --config-dir`)",
    )
    args = parser.parse_args(argv)
    from chronobench.errors import ConfigError

    for kind in args.what:
        if kind not in KINDS:
            import difflib

            close = difflib.get_close_matches(kind, list(KINDS), n=1)
            guess = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(f"no kind {kind!r}; {guess}choose from {', '.join(KINDS)}")
    for i, kind in enumerate(args.what or list(KINDS)):
        if i:
            print()
        print(KINDS[kind][1] + ":")
        for line in lines_for(kind, args.config_dir):
            print(line)
    return 0
