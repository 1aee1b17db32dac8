"""check_integrity reads one consistent snapshot while another process writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._memory_fixtures import APP, USER, add, hash_store, shared_location

pytestmark = pytest.mark.usefixtures("each_backend")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parents[1]

# Child: commits, truncates and reverts as fast as it can until it has done n steps.
_WRITER = """
import random, sys
from chronomem import ChronoMem, HashEmbedder
mem = ChronoMem(sys.argv[1], embedder=HashEmbedder())
rng = random.Random(0)
print("ready", flush=True)
for i in range(int(sys.argv[2])):
    r = rng.random()
    if r < 0.8:
        mem.commit("app", "ann", [{"op": "add", "item_id": f"w{rng.randrange(30)}",
                   "text": f"writer fact {i}"}], source="w", reason="race")
    else:
        ids = [v.version_id for v in mem.versions("app", "ann")]
        mem.rollback_to_version("app", "ann", rng.choice(ids[len(ids) // 2:]),
                                mode="truncate" if r < 0.9 else "revert")
print("done", flush=True)
"""


@pytest.mark.slow  # a writer subprocess races the check
def test_check_integrity_is_clean_while_a_process_writes(tmp_path: Path) -> None:
    path = shared_location(tmp_path, "race")
    with hash_store(path) as mem:
        mem.commit(APP, USER, [add("seed", "seed fact")], source="s", reason="r")
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, path, "300"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    checks, problems = 0, []
    with hash_store(path) as reader:
        while proc.poll() is None:
            problems += reader.check_integrity(APP, USER)
            checks += 1
        proc.wait(timeout=120)
        problems += reader.check_integrity(APP, USER)
    assert proc.returncode == 0
    assert checks >= 5, "the checks did not overlap the writer"
    assert problems == []
