"""Atomic file writes: the one way chronobench writes a file that must never be seen
half-written (built datasets, run folders, the leaderboard, published snapshots).

Bottom layer: imports nothing from chronobench.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_bytes", "atomic_write_json", "atomic_write_text", "dump_json"]


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line endings) to ``path`` and return the path.

    The bytes go to a temporary file in the same folder, are fsynced, and the file is
    renamed over ``path``; the folder is fsynced too, so after a crash ``path`` holds
    either the old or the new content, never a torn one. The file gets the mode a plain
    ``open(path, "w")`` would give it: an existing file's own, else 0666 less the umask.
    """
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` as :func:`atomic_write_text` writes text."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _open_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp makes the file 0600: others could not read a shared results folder.
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        else:  # pragma: no cover - Windows before Python 3.13
            os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process's umask, read without changing it where the OS allows (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    # Elsewhere the only way is to set it and put it back; the lock keeps our own
    # writers from seeing the temporary value.
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _open_mode(path: Path) -> int:
    """The permission bits ``open(path, "w")`` would leave on ``path``."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _fsync_dir(folder: Path) -> None:
    # Makes the rename itself durable; some platforms cannot open a folder: best effort.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def dump_json(obj: Any) -> str:
    """A JSON document with sorted keys, two-space indent, unescaped unicode and a
    trailing newline (stable bytes); non-JSON values are written as ``str``."""
    return json.dumps(obj, indent=2, sort_keys=True, default=str, ensure_ascii=False) + "\n"


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """:func:`dump_json` of ``obj``, written with :func:`atomic_write_text`."""
    return atomic_write_text(path, dump_json(obj))


@contextmanager
def file_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """An exclusive lock across processes on the lock file ``path`` (created, with its
    folder; it holds no data). Without POSIX locks it holds nothing: callers must stay
    correct when two processes do the same work (they write atomically)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    lock = Path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
