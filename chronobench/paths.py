"""Where shipped files are found: a source checkout, or an installed wheel.

``configs/`` at the repository's top level is the one source of truth. A wheel carries a
copy under ``chronobench/_shipped/`` (``configs/`` and the tiny LoCoMo fixture the smoke
experiment uses), made by the build hook in ``setup.py``; a checkout (editable or not
installed) reads the top-level files directly.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent

# Folders of user configs (os.pathsep-separated), searched after configs/.
CONFIG_PATH_ENV = "CHRONOBENCH_CONFIG_PATH"
# The results folder of runs and the leaderboard (configs/config.yaml's paths.results_dir).
RESULTS_ENV = "CHRONOBENCH_RESULTS"


def results_dir() -> Path:
    """The results folder a command uses when given none: ``$CHRONOBENCH_RESULTS``, else
    ``results`` (as ``run`` reads it: ``paths.results_dir`` in configs/config.yaml)."""
    return Path(os.environ.get(RESULTS_ENV) or "results").expanduser()


# The cache folder of vectors, calls and installed models (configs/config.yaml's
# paths.cache_dir).
CACHE_ENV = "CHRONOBENCH_CACHE"


def cache_dir() -> Path:
    """The cache folder a command uses when given none: ``$CHRONOBENCH_CACHE``, else
    ``.cache/chronobench`` (where ``install-model`` puts models)."""
    return Path(os.environ.get(CACHE_ENV) or ".cache/chronobench")


def install_dirs(cache: str | os.PathLike[str] | None) -> list[Path]:
    """The folders an installed model is looked for in, first match wins: the run's cache
    folder ``cache``, then the default one. An installed model is not a cache: a run with
    an empty cache folder (``verify``) still finds what ``install-model`` put there."""
    return list(dict.fromkeys([Path(cache) if cache is not None else cache_dir(), cache_dir()]))


def roots() -> list[Path]:
    """Folders relative config paths are looked up in, first match wins: the checkout
    root (when this is a checkout), then the wheel's shipped copy."""
    out = []
    checkout = _PACKAGE.parent
    if (checkout / "configs" / "config.yaml").is_file():
        out.append(checkout)
    shipped = _PACKAGE / "_shipped"
    if (shipped / "configs" / "config.yaml").is_file():
        out.append(shipped)
    # Installed packages (data_builders/user_queries/*.jsonl) sit beside chronobench/.
    if checkout not in out:
        out.append(checkout)
    return out


def config_dir() -> Path:
    """The Hydra config folder (``configs/``)."""
    for root in roots():
        if (root / "configs" / "config.yaml").is_file():
            return root / "configs"
    raise FileNotFoundError(
        f"no configs/config.yaml in {', '.join(str(r) for r in roots())}; reinstall chronobench"
    )


def resolve_shipped(path: str | None) -> str | None:
    """A config path such as ``tests/fixtures/locomo_tiny.json``: as given when it exists
    from the current folder (or is absolute), else the first shipped root holding it."""
    if path is None:
        return None
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return str(p)
    for root in roots():
        if (root / p).exists():
            return str(root / p)
    return path


def user_config_dirs(extra: Iterable[str | Path] = ()) -> list[Path]:
    """Folders of user configs, searched after ``configs/`` (so a user file never shadows
    a shipped one): ``extra`` (``run --config-dir``, in order), then the entries of
    ``$CHRONOBENCH_CONFIG_PATH``. Each holds config groups as ``configs/`` does
    (``system/<name>.yaml``, ``experiment/<name>.yaml``, ...)."""
    from chronobench.errors import ConfigError

    env = [p for p in os.environ.get(CONFIG_PATH_ENV, "").split(os.pathsep) if p.strip()]
    out: list[Path] = []
    for given, where in [
        *((e, "--config-dir") for e in extra),
        *((e, CONFIG_PATH_ENV) for e in env),
    ]:
        path = Path(given).expanduser().resolve()
        if not path.is_dir():
            raise ConfigError(
                f"{where} {given}: not a folder; give a folder of config groups "
                "(e.g. one holding system/<name>.yaml), see docs/plugins.md"
            )
        if path not in out:
            out.append(path)
    return out


def portable(path: str | None) -> str | None:
    """``path`` as a published file may record it: unchanged when relative; relative to
    the checkout (or the wheel's shipped copy) when under it; else its file name only (an
    absolute path names one machine's folders; the file's content is covered by its
    sha256 wherever it matters)."""
    if path is None:
        return None
    p = Path(path).expanduser()
    if not p.is_absolute():
        return p.as_posix()
    resolved = p.resolve()
    for root in roots():
        try:
            return resolved.relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
    return p.name
