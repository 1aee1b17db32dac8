"""What audits read: a dataset composed from the same configs as a run, and the
published interval of the headline a track's attacks are held against."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from chronobench.audit.contract import Interval
from chronobench.audit.registry import AuditOptions

__all__ = ["compose_spec", "load_data", "published_interval", "published_runs"]


def compose_spec(overrides: Sequence[str]) -> Any:
    """The :class:`~chronobench.spec.RunSpec` ``python -m chronobench run`` would build
    from ``overrides`` (the same configs, so an audit reads exactly a run's data)."""
    from hydra import initialize_config_dir

    from chronobench.paths import config_dir
    from chronobench.runner.experiment import compose
    from chronobench.spec import spec_from_config

    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg, choices = compose(list(overrides))
    return spec_from_config(cfg, choices=choices)


def load_data(overrides: Sequence[str], options: AuditOptions) -> Any:
    """The :class:`~chronobench.runner.datasets.RunData` of a run with ``overrides``
    (built on first use, into ``options.data`` or the run's own data folder)."""
    from chronobench.runner.datasets import load_run_data

    spec = compose_spec(overrides)
    data_dir = options.data or Path(spec.paths.data_dir)
    return load_run_data(spec.dataset, data_dir)


def published_runs(results: Path) -> list[tuple[Path, dict[str, Any]]]:
    """``(folder, manifest)`` of every published run under ``results/published``."""
    out = []
    for manifest in sorted((results / "published").glob("*/manifest.json")):
        out.append((manifest.parent, json.loads(manifest.read_text(encoding="utf-8"))))
    return out


def published_interval(
    results: Path, match: Callable[[Mapping[str, Any]], bool], path: Sequence[str]
) -> Interval:
    """The figure at ``path`` in the ``metrics.json`` of the one published run whose
    manifest ``match`` accepts. Raises ``LookupError`` naming the folder when none or
    several match (an audit must say which published row it holds attacks against)."""
    found = [folder for folder, manifest in published_runs(results) if match(manifest)]
    if len(found) != 1:
        raise LookupError(
            f"{results / 'published'}: {len(found)} published runs match the audited "
            f"headline ({[f.name for f in found]}); publish it first "
            "(`python -m chronobench run`) or check the match"
        )
    node: Any = json.loads((found[0] / "metrics.json").read_text(encoding="utf-8"))
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            raise LookupError(f"{found[0] / 'metrics.json'}: no figure at {'/'.join(path)}")
        node = node[key]
    return Interval(mean=node["mean"], lo=node["ci_low"], hi=node["ci_high"], n=node["n"])
