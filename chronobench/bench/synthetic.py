"""The synthetic write streams of the store benchmarks (one module both the latency
benchmark and its concurrent writer processes import)."""

from __future__ import annotations

import random
from typing import Any

NAMES = ["Ann", "Bob", "Caro", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun"]
VERBS = ["visited", "talked about", "bought", "planned", "cooked", "read about", "painted"]
THINGS = [
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
PLACES = ["Oslo", "Lima", "Kyoto", "Porto", "Austin", "Cairo", "Hanoi", "Quito", "Riga"]


def synthetic_writes(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` writes: mostly adds, some updates and deletes, 1-2 ops each."""
    rng = random.Random(seed)
    live: list[str] = []
    writes = []
    for j in range(1, n + 1):
        ops = []
        for _ in range(1 if rng.random() < 0.7 else 2):
            text = (
                f"{rng.choice(NAMES)} {rng.choice(VERBS)} {rng.choice(THINGS)} in "
                f"{rng.choice(PLACES)} (note {j}-{rng.randrange(10**6)})"
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
