"""Synthetic evaluation of version resolution: hybrid fusion vs the DeltaReranker.

Each stream is a persona's memory: writes that add one salient fact plus 0-3
small-talk fillers, with recurring people, places and topics as distractors.
Each query paraphrases one salient fact with different wording (no template
sentence is reused) and its gold answer is the write that committed it. Seeds
0-49 are the dev split (used to choose the reranker weights), seeds >= 100 the
test split reported by ``python -m chronobench bench rerank-eval``.
"""

from __future__ import annotations

import random
from typing import Any

from chronomem import ChronoMem, DeltaReranker, resolve_embedder

_PEOPLE = ["Nora", "Omar", "Priya", "Lukas", "Mei", "Tomás", "Ines", "Kofi"]
_CITY = ["Lisbon", "Denver", "Osaka", "Tallinn", "Nairobi", "Bergen", "Cusco", "Hobart"]
_JOB = ["nurse", "welder", "pilot", "librarian", "chef", "architect", "tutor", "baker"]
_PET = ["beagle", "parrot", "tabby cat", "tortoise", "ferret", "husky"]
_PETNAME = ["Biscuit", "Pepper", "Mango", "Ziggy", "Olive", "Rocket"]
_HOBBY = ["rock climbing", "pottery", "salsa dancing", "birdwatching", "fencing", "knitting"]
_FOOD = ["peanuts", "shellfish", "gluten", "dairy", "sesame", "strawberries"]
_THING = ["electric bike", "espresso machine", "telescope", "sewing machine", "kayak"]
_COUNTRY = ["Iceland", "Peru", "Vietnam", "Morocco", "Norway", "Chile"]

# (statement committed to memory, paraphrased request naming it)
_FACTS = [
    ("{p} moved to {city} last month", "when {p} relocated to {city}"),
    ("{p} got a new job as a {job}", "{p} starting work as a {job}"),
    ("{p} adopted a {pet} named {petname}", "{p} bringing home {petname} the {pet}"),
    ("{p} took up {hobby} with friends", "{p} beginning {hobby} lessons"),
    ("{p} found out about an allergy to {food}", "{p} can no longer eat {food}"),
    ("{p} bought an {thing} online", "the {thing} purchase by {p}"),
    ("{p} booked a holiday in {country} for the summer", "{p}'s vacation plans for {country}"),
]
_FILLERS = [
    "{p} said the weather was grey and rainy",
    "{p} mentioned watching a long documentary",
    "{p} complained about traffic on the way home",
    "{p} asked for a good podcast recommendation",
    "{p} talked about a busy week and feeling tired",
    "{p} shared a funny story about a neighbour",
]


def make_stream(
    seed: int, n_writes: int = 40, n_queries: int = 20
) -> tuple[list[str], list[tuple[str, int]]]:
    """(write texts, [(query, gold write index 1-based)]) for one synthetic stream."""
    rng = random.Random(seed)
    writes: list[list[str]] = []
    salient: list[tuple[str, int]] = []
    for j in range(1, n_writes + 1):
        slots = {
            "p": rng.choice(_PEOPLE),
            "city": rng.choice(_CITY),
            "job": rng.choice(_JOB),
            "pet": rng.choice(_PET),
            "petname": rng.choice(_PETNAME),
            "hobby": rng.choice(_HOBBY),
            "food": rng.choice(_FOOD),
            "thing": rng.choice(_THING),
            "country": rng.choice(_COUNTRY),
        }
        stmt, query = rng.choice(_FACTS)
        lines = [stmt.format(**slots)]
        lines += [
            rng.choice(_FILLERS).format(p=rng.choice(_PEOPLE)) for _ in range(rng.randrange(4))
        ]
        rng.shuffle(lines)
        writes.append(lines)
        salient.append((query.format(**slots), j))
    queries = rng.sample(salient, min(n_queries, len(salient)))
    return ["\n".join(w) for w in writes], queries


def evaluate(seeds: list[int], embedder: Any, reranker: DeltaReranker) -> dict[str, float]:
    """R@1 and R@5 of hybrid fusion and of hybrid + reranker over ``seeds``."""
    hits = {"hybrid@1": 0, "hybrid@5": 0, "rerank@1": 0, "rerank@5": 0}
    total = 0
    for seed in seeds:
        writes, queries = make_stream(seed)
        mem = ChronoMem(":memory:", embedder=embedder)
        mem.commit_many(
            "eval",
            "u",
            [
                {
                    "ops": [
                        {"op": "add", "item_id": f"w{j}-{i}", "text": line}
                        for i, line in enumerate(text.split("\n"))
                    ],
                    "source": "eval",
                    "reason": "ingest",
                }
                for j, text in enumerate(writes, start=1)
            ],
        )
        for query, gold in queries:
            plain = [v for v, _ in mem.resolve("eval", "u", query, 5, intent="restore_to")]
            mem.reranker = reranker
            ranked = [v for v, _ in mem.resolve("eval", "u", query, 5, intent="restore_to")]
            mem.reranker = None
            hits["hybrid@1"] += plain[:1] == [gold]
            hits["hybrid@5"] += gold in plain
            hits["rerank@1"] += ranked[:1] == [gold]
            hits["rerank@5"] += gold in ranked
            total += 1
        mem.close()
    return {k: v / max(total, 1) for k, v in hits.items()} | {"queries": float(total)}


def main(n_streams: int = 8, first_seed: int = 100) -> int:
    """Print hybrid vs reranked recall on the test split (MiniLM embedder)."""
    embedder = resolve_embedder("minilm")
    res = evaluate(
        list(range(first_seed, first_seed + n_streams)), embedder, DeltaReranker(embedder)
    )
    print(
        f"synthetic rollback resolution, {int(res['queries'])} queries, "
        f"{n_streams} streams (seeds {first_seed}..{first_seed + n_streams - 1}), MiniLM"
    )
    print(f"  hybrid (RRF k0=60)      R@1 {res['hybrid@1']:.3f}   R@5 {res['hybrid@5']:.3f}")
    print(f"  hybrid + DeltaReranker  R@1 {res['rerank@1']:.3f}   R@5 {res['rerank@5']:.3f}")
    return 0
