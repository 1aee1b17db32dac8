"""Build hook only (all metadata is in pyproject.toml).

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


setup(cmdclass={"build_py": BuildPyWithShipped})
