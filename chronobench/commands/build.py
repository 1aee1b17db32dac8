"""``chronobench build <dataset> ...``: build datasets and print their statistics.

One subcommand per registered dataset with a builder (plug-ins included); its flags are
its params model's fields (``--max-boundary`` for ``max_boundary``), their help and
defaults read from the model. A flag left out is not passed, so the model's default
applies.
"""

from __future__ import annotations

import argparse
import sys
import typing
from collections.abc import Sequence
from typing import Any

from chronobench.data.io import MANIFEST_FILE, read_json
from data_builders.build import build_dataset
from data_builders.errors import DatasetError
from data_builders.stats import format_stats


def _datasets() -> dict[str, Any]:
    """Registered datasets that have a builder, by name."""
    from chronobench.runner.dataset_registry import DATASETS

    loaded = {name: DATASETS.entry(name).load() for name in DATASETS.names()}
    return {name: ds for name, ds in loaded.items() if ds.plan is not None}


def _add_param(p: argparse.ArgumentParser, name: str, field: Any) -> None:
    """One flag of a params model's field: its type or choices, its help and default."""
    flag = "--" + name.replace("_", "-")
    about = field.description or ""
    if field.is_required():
        p.add_argument(flag, dest=name, required=True, help=about)
        return
    help_ = f"{about} (default: {field.get_default(call_default_factory=True)})".strip()
    kind = field.annotation
    kwargs: dict[str, Any] = {"dest": name, "default": None, "help": help_}
    if kind is bool:
        kwargs["action"] = argparse.BooleanOptionalAction
    elif typing.get_origin(kind) is typing.Literal:
        kwargs["choices"] = list(typing.get_args(kind))
    elif kind in (int, float):
        kwargs["type"] = kind
    p.add_argument(flag, **kwargs)


def _parser(datasets: dict[str, Any]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="chronobench build", description=__doc__)
    sub = p.add_subparsers(dest="dataset", required=True)
    for name, ds in datasets.items():
        d = sub.add_parser(name, help=ds.title or None)
        d.add_argument("--source", help="local source file (default: see README)")
        d.add_argument("--out", help="output root (default: <repo>/data/built)")
        d.add_argument("--stats", action="store_true", help="print dataset statistics")
        d.add_argument("--force", action="store_true", help="rebuild even if up to date")
        if ds.granularities:
            d.add_argument(
                "--granularity",
                default=ds.granularities[0],
                choices=[*ds.granularities, "all"],
                help=f"(default: {ds.granularities[0]})",
            )
        for key, field in ds.params.model_fields.items():
            _add_param(d, key, field)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 on bad input, with the reason on stderr)."""
    datasets = _datasets()
    args = _parser(datasets).parse_args(list(sys.argv[1:] if argv is None else argv))
    ds = datasets[args.dataset]
    given = {k: getattr(args, k) for k in ds.params.model_fields if getattr(args, k) is not None}
    gran = getattr(args, "granularity", None)
    grans = list(ds.granularities) if gran == "all" else [gran]
    try:
        folders = [
            build_dataset(
                ds, granularity=g, source=args.source, out_dir=args.out, force=args.force, **given
            )
            for g in grans
        ]
    except DatasetError as exc:
        print(f"chronobench build: error: {exc}", file=sys.stderr)
        return 2
    for folder in folders:
        print(f"built {folder}")
        if args.stats:
            print(format_stats(read_json(folder / MANIFEST_FILE)))
    return 0
