"""Speed benchmark of the ChronoMem store (``python -m chronobench bench store``).

For each stream size it ingests a synthetic stream one ``commit`` at a time into
an on-disk store and reports commit latency, truncate/revert rollback latency to
an early and a late target (to show the cost follows the rows changed after the
target, not the snapshot or history size), hybrid resolve latency without a
reranker, and bytes on disk per write.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chronobench.memory import ChronoMem, HashEmbedder, resolve_embedder

_NAMES = ["Ann", "Bob", "Caro", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun"]
_VERBS = ["visited", "talked about", "bought", "planned", "cooked", "read about", "painted"]
_THINGS = [
    "a red kite",
    "sushi",
    "the museum",
    "a used bike",
    "tax forms",
    "jazz records",
    "a camping trip",
    "pottery",
    "a chess set",
    "the marathon",
    "a violin",
    "tomatoes",
]
_PLACES = ["Oslo", "Lima", "Kyoto", "Porto", "Austin", "Cairo", "Hanoi", "Quito", "Riga"]


def synthetic_writes(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` writes: mostly adds, some updates and deletes, 1-2 ops each."""
    rng = random.Random(seed)
    live: list[str] = []
    writes = []
    for j in range(1, n + 1):
        ops = []
        for _ in range(1 if rng.random() < 0.7 else 2):
            text = (
                f"{rng.choice(_NAMES)} {rng.choice(_VERBS)} {rng.choice(_THINGS)} in "
                f"{rng.choice(_PLACES)} (note {j}-{rng.randrange(10**6)})"
            )
            r = rng.random()
            if live and r < 0.15:
                ops.append({"op": "update", "item_id": rng.choice(live), "text": text})
            elif live and r < 0.2:
                ops.append({"op": "delete", "item_id": live.pop(rng.randrange(len(live)))})
            else:
                live.append(f"item{j}-{len(ops)}")
                ops.append({"op": "add", "item_id": live[-1], "text": text})
        writes.append(
            {
                "ops": ops,
                "source": "bench",
                "reason": "ingest",
                "labels": {"session": j // 20, "write": j},
            }
        )
    return writes


def _ms(values: list[float]) -> str:
    vals = sorted(values)
    p95 = vals[min(len(vals) - 1, int(round(0.95 * (len(vals) - 1))))]
    return f"median {1000 * statistics.median(vals):7.2f} ms   p95 {1000 * p95:7.2f} ms"


def _timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench_size(n: int, embedder: Any, workdir: Path, trials: int = 3) -> dict[str, Any]:
    """Run the benchmark for one stream size; returns raw figures and prints a block."""
    writes = synthetic_writes(n)
    path = workdir / f"store-{n}.db"
    mem = ChronoMem(path, embedder=embedder)
    if not isinstance(embedder, HashEmbedder):  # warm model + cache so we time the store
        mem._embed_many(["warm up"])
    commit_s = [
        _timed(lambda w=w: mem.commit("bench", "u", **w))
        for w in writes  # type: ignore[misc]
    ]
    mem.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = path.stat().st_size
    with ChronoMem(workdir / f"batched-{n}.db", embedder=embedder) as other:
        # fresh texts (another seed), so the embedding cache does not hide encoder cost
        batched = _timed(lambda: other.commit_many("bench", "u", synthetic_writes(n, seed=1)))
    rng = random.Random(1)
    queries = [
        f"undo when {rng.choice(_NAMES)} {rng.choice(_VERBS)} {rng.choice(_THINGS)}"
        for _ in range(30)
    ]
    cold = _timed(lambda: mem.resolve_hybrid("bench", "u", queries[0], 5))
    resolve_s = [_timed(lambda q=q: mem.resolve("bench", "u", q, 5)) for q in queries]
    out: dict[str, Any] = {
        "n": n,
        "commit": commit_s,
        "bytes_per_write": size / n,
        "resolve": resolve_s,
        "resolve_cold": cold,
    }
    early, late = max(1, n // 10), max(1, n - n // 10)
    for mode in ("truncate", "revert"):
        for name, target in (("early", early), ("late", late)):
            times = []
            for t in range(trials):
                clone = mem.clone(workdir / f"clone-{n}-{mode}-{name}-{t}.db")
                times.append(
                    _timed(
                        lambda c=clone, tg=target, md=mode: c.rollback_to_version(
                            "bench", "u", tg, mode=md
                        )
                    )
                )
                assert clone.check_integrity("bench", "u") == [], "rollback left the store broken"
                clone.close()
            out[f"{mode}_{name}"] = times
    snap_early = _timed(lambda: mem.snapshot("bench", "u", early))
    snap_late = _timed(lambda: mem.snapshot("bench", "u", late))
    items = len(mem.snapshot("bench", "u"))
    mem.close()
    print(f"\n== {n} writes ({type(embedder).__name__}), {items} items in S(HEAD) ==")
    print(f"commit                {_ms(commit_s)}")
    print(f"commit_many (batched) {1000 * batched / n:7.2f} ms per write (one encode call)")
    for mode in ("truncate", "revert"):
        for name, target in (("early", early), ("late", late)):
            follow = n - target
            print(
                f"rollback {mode:8s} to v{target:<6d} ({follow:5d} versions after) "
                f"{_ms(out[f'{mode}_{name}'])}   "
                f"({1e6 * statistics.median(out[f'{mode}_{name}']) / follow:.0f} us per later version)"
            )
    print(
        f"read S(v) manifest    early v{early}: {1000 * snap_early:.2f} ms   "
        f"late v{late}: {1000 * snap_late:.2f} ms"
    )
    print(
        f"resolve (no reranker) {_ms(resolve_s)}   (first call, builds matrix: "
        f"{1000 * cold:.1f} ms)"
    )
    print(f"bytes on disk         {size / n:,.0f} per write ({size / 1e6:.1f} MB total)")
    return out


def run(sizes: list[int], embedders: list[str]) -> list[dict[str, Any]]:
    """Benchmark every (embedder, size) pair in a temporary directory."""
    results = []
    with tempfile.TemporaryDirectory(prefix="chronomem-bench-") as tmp:
        for name in embedders:
            embedder = HashEmbedder() if name == "hash" else resolve_embedder(name)
            for n in sizes:
                results.append({"embedder": name, **bench_size(n, embedder, Path(tmp))})
    return results
