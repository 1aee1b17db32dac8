"""A PostgreSQL commit's client CPU: with the real call, and with its reply faked.

One writer makes the bench's add/update commits on a scope of its own, twice: once as
usual, once with the commit function's reply faked (nothing sent, no wait), which
leaves the client's own code with warm caches. The difference is what the round trip
and waking up after it cost the client (much larger on a loaded machine).

    CHRONOBENCH_PG_URL=postgresql://... python scripts/pg_client_cpu.py [COMMITS]

Run it from two checkouts (``PYTHONPATH=<checkout>``), alternating, to compare them.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

# This checkout first: a virtual environment's installed chronomem (a wheel) goes stale
# as the checkout is edited, and Python puts the script's folder on the path, not it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _faked_call(name: str, sql: str, args: Any) -> tuple[bytes, bytes]:
    """The commit function's reply, without sending anything."""
    return b"{1}", b"1"


def client_cpu_ms(url: str, commits: int, faked: bool) -> float:
    import chronomem
    from chronobench.bench.synthetic import synthetic_writes

    writes = [
        w
        for w in synthetic_writes(commits + 1, seed=11)
        if all(o.get("op") != "delete" for o in w["ops"])  # a delete reads first
    ]
    user = f"cpu-{os.getpid()}-{time.time_ns()}"
    with chronomem.ChronoMem(url, embedder=chronomem.HashEmbedder()) as mem:
        mem.commit("client-cpu", user, **writes[0])  # the scope's row, then the loop
        if faked:
            conn = mem._db.conn  # a measurement's reach into the store, not an API
            conn.call_prepared = _faked_call
        start = time.process_time()
        for w in writes[1:]:
            mem.commit("client-cpu", user, **w)
        return (time.process_time() - start) / (len(writes) - 1) * 1e3


def main() -> None:
    url = os.environ.get("CHRONOBENCH_PG_URL")
    if not url:
        sys.exit(
            "set CHRONOBENCH_PG_URL to a PostgreSQL server "
            "(python -m chronomem.pg.cluster start DIR prints one)"
        )
    commits = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    real = client_cpu_ms(url, commits, faked=False)
    faked = client_cpu_ms(url, commits, faked=True)
    print(f"client CPU per commit: real call {real:.3f} ms, reply faked {faked:.3f} ms")


if __name__ == "__main__":
    main()
