"""Build hook and the dependency list (all other metadata is in pyproject.toml).

The ChronoMem store is its own distribution in ``chronomem/``; the benchmark requires it
by a direct reference to that folder, so ``pip install -e ".[dev]"`` in a fresh clone
installs both. pyproject.toml cannot say this: a direct reference must be an absolute
``file://`` URL, which only exists once the checkout's location is known.

``configs/`` stays at the repository's top level, the one source of truth. A built wheel
needs it too (``python -m chronobench run`` composes it with Hydra), as well as the tiny
LoCoMo fixture the smoke experiment reads: both are copied into the wheel as
``chronobench/_shipped/`` (see chronobench/paths.py for how they are found).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
CHRONOMEM = ROOT / "chronomem"


def _chronomem_requirement() -> str:
    """The store with the embedders the benchmark's published runs use (MiniLM on torch
    and on ONNX), the backbone resolver's stemmer and WordNet's files (the request reading
    that published figures use): the folder here when there is one,
    else the released version."""
    extras = "chronomem[minilm,onnx,resolver,wordnet]"
    if (CHRONOMEM / "pyproject.toml").is_file():
        return f"{extras} @ {CHRONOMEM.as_uri()}"
    return f"{extras}==0.1.0"


DEPENDENCIES = [
    _chronomem_requirement(),
    "numpy>=1.24",
    "pydantic>=2.5",
    "hydra-core>=1.3",
    "omegaconf>=2.3",
    "nltk>=3.8",
    "rouge-score>=0.1.2",
    "tqdm>=4.60",
    "datasets>=2.18",
    "pyarrow>=14",
    # The benchmark's results as data frames (chronobench/results/frames.py); ChronoMem,
    # the store, never imports it.
    "pandas>=2.0",
]
SHIPPED = {
    "configs": "configs",
    "tests/fixtures/locomo_tiny.json": "tests/fixtures/locomo_tiny.json",
}


class BuildPyWithShipped(build_py):
    """Copy the shipped files next to the built chronobench package."""

    def run(self) -> None:
        super().run()
        dest_root = Path(self.build_lib) / "chronobench" / "_shipped"
        for src, dest in SHIPPED.items():
            s, d = ROOT / src, dest_root / dest
            if s.is_dir():
                shutil.copytree(
                    s, d, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
                )
            elif s.is_file():
                d.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(s, d)


setup(install_requires=DEPENDENCIES, cmdclass={"build_py": BuildPyWithShipped})
