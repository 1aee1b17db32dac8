"""A PostgreSQL commit's CPU on both sides: the writer's, its server backend's, and where
the commit function spends its statement time.

One writer makes the bench's commits (``synthetic_writes``) on a new scope of its own and
prints, per commit, the client's CPU (``time.process_time``), its backend's CPU (from
``/proc``: the server must run on this machine) and the WAL it wrote; with ``--statements``
and the server's ``pg_stat_statements`` (``shared_preload_libraries``, ``track = all``,
the extension created in ``public``) it also lists the statements inside the commit
function by time per commit (the statistics are reset first: a server of your own).

    CHRONOBENCH_PG_URL=postgresql://... python scripts/pg_commit_cpu.py [COMMITS] [--statements]

To compare two checkouts, run it from each (``PYTHONPATH=<checkout>``), alternating, each
in a schema of its own (``?options=-csearch_path%3Dname`` on the URL): a store of one
schema version refuses to open another's.
"""

from __future__ import annotations

import os
import sys
import time
import zlib
from pathlib import Path

# This checkout first: a virtual environment's installed chronomem (a wheel) goes stale
# as the checkout is edited, and Python puts the script's folder on the path, not it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _backend_ticks(pid: int) -> int:
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def main() -> None:
    import psycopg

    import chronomem
    from chronobench.bench.synthetic import synthetic_writes

    url = os.environ.get("CHRONOBENCH_PG_URL")
    if not url:
        sys.exit(
            "set CHRONOBENCH_PG_URL to a PostgreSQL server on this machine "
            "(python -m chronomem.pg.cluster start DIR prints one)"
        )
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    commits = int(args[0]) if args else 400
    statements = "--statements" in sys.argv
    writes = synthetic_writes(commits + 1, seed=zlib.crc32(b"pg_commit_cpu") % 1000)
    user = f"cpu-{os.getpid()}-{time.time_ns()}"
    wal = "SELECT wal_records, wal_bytes FROM pg_stat_wal"
    with chronomem.ChronoMem(url, embedder=chronomem.HashEmbedder()) as mem:
        mem.commit("commit-cpu", user, **writes[0])  # the scope's row, then the loop
        pid = mem.backend.conn.raw.info.backend_pid
        with psycopg.connect(url, autocommit=True) as admin:
            if statements:
                admin.execute("SELECT public.pg_stat_statements_reset()")
            wal0 = admin.execute(wal).fetchone()
            s0, c0 = _backend_ticks(pid), time.process_time()
            for w in writes[1:]:
                mem.commit("commit-cpu", user, **w)
            s1, c1 = _backend_ticks(pid), time.process_time()
            wal1 = admin.execute(wal).fetchone()
            rows = []
            if statements:
                rows = admin.execute(
                    "SELECT calls, total_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) "
                    "FROM public.pg_stat_statements WHERE toplevel IS FALSE OR query LIKE "
                    "'%chronomem_commit%' ORDER BY total_exec_time DESC LIMIT 20"
                ).fetchall()
    tick = os.sysconf("SC_CLK_TCK")
    print(
        f"{commits} commits: client CPU {1e3 * (c1 - c0) / commits:.3f} ms, server backend CPU "
        f"{1e3 * (s1 - s0) / tick / commits:.3f} ms per commit; WAL "
        f"{(wal1[0] - wal0[0]) / commits:.1f} records, {float(wal1[1] - wal0[1]) / commits:,.0f} "
        "bytes per commit"
    )
    for calls, ms, query in rows:
        print(f"{1e3 * ms / commits:8.1f} us/commit  {calls:6d} calls  {query}")


if __name__ == "__main__":
    main()
