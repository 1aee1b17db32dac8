"""Could a float32 embedding stand in for the published float64 one? A measurement.

The published vectors are MiniLM run in float64 and snapped to the 2**-15 grid
(docs/reproducibility.md); the selection cells write their dense scores at 6 decimals
into samples.jsonl, whose sha256 the board publishes. This script embeds LoCoMo turns
and questions both ways, one thread, and prints:

- the CPU seconds of each path (float32 batched as float64 is, and float32 one text at
  a time as the ``torch`` runtime does);
- how many 6-decimal cosines (question x turn) a float32 pass would change, unsnapped
  and snapped to the grid;
- how many turn rows a float32 pass could keep if it re-embedded in float64 every row
  with a component within ``delta`` of a grid rounding boundary (the only decision whose
  outcome fixes every later score), for deltas around float32's cross-CPU error (~2e-7).

    python scripts/f32_grid_check.py [--turns 400] [--locomo PATH]

It publishes nothing. docs/speed.md quotes its output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

# This checkout first: a virtual environment's installed chronomem (a wheel) goes stale
# as the checkout is edited, and Python puts the script's folder on the path, not it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _texts(locomo: Path, n_turns: int) -> tuple[list[str], list[str]]:
    data = json.loads(locomo.read_text(encoding="utf-8"))
    turns: list[str] = []
    for conv in data:
        sessions = conv["conversation"]
        for key in sorted(k for k in sessions if k.startswith("session_")):
            if isinstance(sessions[key], list):
                turns += [f"{t['speaker']}: {t['text']}" for t in sessions[key]]
        if len(turns) >= n_turns:
            break
    questions = [qa["question"] for qa in data[0]["qa"][:40]]
    return turns[:n_turns], questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument(
        "--locomo",
        type=Path,
        default=Path(os.environ.get("CHRONOBENCH_LOCOMO", "../shared/data/locomo10.json")),
    )
    args = parser.parse_args()
    if not args.locomo.is_file():
        raise SystemExit(f"no LoCoMo file at {args.locomo}: pass --locomo PATH")

    import numpy as np
    import torch

    from chronomem import embedding_models
    from chronomem.embedding_models import SentenceTransformerEmbedder, snap

    torch.set_num_threads(1)
    turns, questions = _texts(args.locomo, args.turns)
    texts = turns + questions

    f64 = SentenceTransformerEmbedder("minilm", dtype="float64")
    f64.encode(["warm up"])
    start = time.process_time()
    grid = np.asarray(f64.encode(texts), np.float64)
    cpu64 = time.process_time() - start
    # The float64 rows before the snap: the distance of each component to a boundary.
    keep_snap = embedding_models.snap
    embedding_models.snap = lambda m: m
    try:
        raw64 = np.asarray(f64.encode(turns), np.float64)
    finally:
        embedding_models.snap = keep_snap
    raw64 /= np.sqrt((raw64 * raw64).sum(axis=1, keepdims=True))

    f32 = SentenceTransformerEmbedder("minilm", dtype="float32")
    f32.encode(["warm up"])
    start = time.process_time()
    alone = np.asarray(f32.encode(texts), np.float64)
    cpu32_alone = time.process_time() - start
    model = f32._load()  # noqa: SLF001 - a measurement: the batched float32 cost
    start = time.process_time()
    model.encode(texts, batch_size=64, convert_to_numpy=True, show_progress_bar=False)
    cpu32_batched = time.process_time() - start

    print(f"{len(turns)} turns + {len(questions)} questions, one thread")
    print(
        f"CPU-s: float64 (published) {cpu64:.1f}, float32 batched {cpu32_batched:.1f}, "
        f"float32 one text at a time {cpu32_alone:.1f}"
    )
    nt = len(turns)
    published = grid[nt:] @ grid[:nt].T  # grid vectors: exact, the written scores
    for name, rows in (("float32 unit rows", alone), ("float32 snapped", snap(alone))):
        rows = np.asarray(rows, np.float64)
        cos = rows[nt:] @ rows[:nt].T
        moved = np.round(cos, 6) != np.round(published, 6)
        print(
            f"{name}: max |cos - published| {np.abs(cos - published).max():.2e}; "
            f"6-decimal score differs in {moved.mean():.1%} of {moved.size} pairs"
        )
    same = np.all(snap(alone[:nt]) == grid[:nt].astype(np.float32), axis=1).mean()
    print(f"turn rows whose snapped float32 vector equals the published one: {same:.1%}")
    gap = np.abs(alone[:nt] - raw64).max()
    print(f"largest component gap float32 vs float64 (unsnapped): {gap:.2e}")
    step = 2.0**-embedding_models.GRID_BITS
    to_boundary = np.abs((raw64 / step) % 1.0 - 0.5) * step
    for delta in (1e-7, 2e-7, 5e-7, 1e-6):
        kept = (to_boundary > delta).all(axis=1).mean()
        print(f"rows with every component farther than {delta:.0e} from a boundary: {kept:.1%}")


if __name__ == "__main__":
    main()
