"""A throwaway PostgreSQL cluster for tests, benchmarks and CI (``python -m ...cluster``).

``initdb`` into a temporary folder (as the ``postgres`` user when running as root:
``initdb`` refuses root), listen on 127.0.0.1 on a free port, trust authentication
on loopback only, sockets in the folder itself. :meth:`Cluster.stop` ends the server
and deletes the folder. Nothing here touches a system cluster.

Command line (used by ``.ci/run``)::

    python -m chronomem.pg.cluster start DIR   # prints the URL, returns
    python -m chronomem.pg.cluster stop DIR
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

SUPERUSER = "chronobench"


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: ``$CHRONOBENCH_PG_BIN``, then
    Debian's ``/usr/lib/postgresql/<newest>/bin``, then ``PATH``; None if none has them."""
    candidates: list[Path] = []
    env = os.environ.get("CHRONOBENCH_PG_BIN")
    if env:
        candidates.append(Path(env))
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = [p for p in debian.iterdir() if p.name.split(".")[0].isdigit()]
        for p in sorted(versions, key=lambda p: float(p.name), reverse=True):
            candidates.append(p / "bin")
    which = shutil.which("initdb")
    if which:
        candidates.append(Path(which).parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ClusterError(RuntimeError):
    """The throwaway cluster could not be created or started (the message says why)."""


class Cluster:
    """One throwaway cluster: ``start()``, ``url``, ``restart()``, ``stop()``."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        bindir: Path | None = None,
        memory: bool = False,
    ):
        self.bindir = bindir or find_bindir()
        if self.bindir is None:
            raise ClusterError(
                "no PostgreSQL server binaries (initdb, pg_ctl) found; install them "
                "(Debian: apt-get install postgresql) or set CHRONOBENCH_PG_BIN"
            )
        # memory: the data directory on tmpfs (/dev/shm) when there is one; creating
        # relations there is ~10x faster than on a journaling disk (tests create a
        # database and a schema per test). Benchmarks keep the default: a real disk.
        base = "/dev/shm" if memory and os.access("/dev/shm", os.W_OK) else None
        self.root = Path(root or tempfile.mkdtemp(prefix="chronobench-pg-", dir=base))
        self.datadir = self.root / "data"
        self.port = 0
        # initdb and postgres refuse to run as root: run them as the postgres user.
        self.run_as: str | None = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError as exc:
                raise ClusterError(
                    "running as root and there is no 'postgres' user to run initdb as; "
                    "create one (useradd postgres) or run as an ordinary user"
                ) from exc
            self.run_as = "postgres"

    @property
    def url(self) -> str:
        """The superuser's connection URL (trust authentication on loopback)."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            user=self.run_as,
            cwd=self.root,
            stdin=subprocess.DEVNULL,
        )
        if check and proc.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise ClusterError(
                f"{args[0]} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}\n{tail}"
            )
        return proc

    def start(self, attempts: int = 3) -> Cluster:
        """initdb (first time) and start on a free loopback port; returns self."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.run_as:
            entry = pwd.getpwnam(self.run_as)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        if not (self.datadir / "PG_VERSION").exists():
            self._run(
                "initdb", "-D", str(self.datadir), "-U", SUPERUSER, "-A", "trust",
                "--encoding=UTF8", "--no-locale", "--no-sync", "--no-instructions",
            )  # fmt: skip
        for attempt in range(attempts):
            self.port = free_port()
            opts = (
                f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} "
                "-c max_connections=200 -c fsync=on"
            )
            proc = self._run(
                "pg_ctl", "-D", str(self.datadir), "-l", str(self.root / "server.log"),
                "-w", "-t", "60", "-o", opts, "start", check=attempt == attempts - 1,
            )  # fmt: skip
            if proc.returncode == 0:
                (self.root / "port").write_text(str(self.port))
                return self
        raise ClusterError("unreachable")  # pragma: no cover

    def restart(self, mode: str = "immediate") -> None:
        """``pg_ctl restart -m mode`` (``immediate``: a crash, recovered from WAL)."""
        # -l as at start: the new postmaster must not inherit (and hold open) our pipes.
        self._run(
            "pg_ctl", "-D", str(self.datadir), "-l", str(self.root / "server.log"),
            "-w", "-t", "60", "-m", mode, "restart",
        )  # fmt: skip

    def stop(self, *, remove: bool = True) -> None:
        """Stop the server (fast shutdown) and delete the folder."""
        if (self.datadir / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.datadir), "-w", "-m", "fast", "stop", check=False)
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """``start DIR`` prints the URL of a new cluster in DIR; ``stop DIR`` removes it."""
    parser = argparse.ArgumentParser(prog="python -m chronomem.pg.cluster")
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("dir", help="folder for the cluster (created; deleted by stop)")
    args = parser.parse_args(argv)
    try:
        cluster = Cluster(args.dir)
        if args.action == "start":
            print(cluster.start().url)
        else:
            cluster.stop()
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
