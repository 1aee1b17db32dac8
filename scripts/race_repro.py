"""Reproduce the read/commit race: writer processes commit while one process reads.

Usage: python scripts/race_repro.py [LOCATION] [SECONDS]  (default: a temp SQLite file, 5 s).
Prints each read path's call and error counts (errors by type, NaN/inf scores).
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# This checkout first: a virtual environment's installed chronomem (a wheel) goes stale
# as the checkout is edited, and Python puts the script's folder on the path, not it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chronomem import ChronoMem, HashEmbedder  # noqa: E402


def writer(path: str, w: int, stop: float) -> None:
    m = ChronoMem(path, embedder=HashEmbedder())
    i = 0
    while time.time() < stop:
        ops = [{"op": "add", "item_id": f"w{w}-{i}", "text": f"tok{i} note {i}"}]
        m.commit("app", "ann", ops, source="w", reason="race", summary=f"tok{i} note {i}")
        i += 1


def main() -> None:
    path = (
        sys.argv[1]
        if len(sys.argv) > 1 and sys.argv[1]
        else os.path.join(tempfile.mkdtemp(), "r.db")
    )
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    m = ChronoMem(path, embedder=HashEmbedder())
    m.commit(
        "app",
        "ann",
        [{"op": "add", "item_id": "seed", "text": "bobtok note"}],
        source="s",
        reason="seed",
    )
    stop = time.time() + secs
    procs = [mp.Process(target=writer, args=(path, w, stop)) for w in range(3)]
    for p in procs:
        p.start()
    calls: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    paths = {
        "search": lambda: [h.score for h in m.search("app", "ann", "bobtok note", 10)],
        "resolve_lexical": lambda: [s for _, s in m.resolve_lexical("app", "ann", "note", 5)],
    }
    while time.time() < stop:
        for name, fn in paths.items():
            calls[name] += 1
            try:
                if any(not math.isfinite(s) for s in fn()):
                    errors[f"{name}: non-finite score"] += 1
            except Exception as exc:  # the race shows as any exception
                errors[f"{name}: {type(exc).__name__}: {exc}"[:120]] += 1
    for p in procs:
        p.join()
    print("calls", dict(calls))
    print("errors", dict(errors) or "none")


if __name__ == "__main__":
    main()
