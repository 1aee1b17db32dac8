"""What a result file records about where it came from."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import subprocess
from pathlib import Path
from typing import Any

from chronobench.results.io import file_sha256  # noqa: F401 (re-exported)

_TRACKED_LIBRARIES = (
    "chronobench",
    "numpy",
    "pydantic",
    "hydra-core",
    "sentence-transformers",
    "torch",
    "transformers",
    "nltk",
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


def config_hash(cfg: dict[str, Any]) -> str:
    """A short stable hash of the parts of a resolved config that can change results."""
    relevant = {k: v for k, v in cfg.items() if k not in _NON_SEMANTIC_KEYS}
    blob = json.dumps(relevant, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:10]


# Keys that say where or how verbosely to run, never what is computed.
_NON_SEMANTIC_KEYS = frozenset({"paths", "progress", "overwrite", "leaderboard", "suite"})
