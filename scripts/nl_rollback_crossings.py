"""Count the memory modules one NL rollback plan crosses.

Usage: python scripts/nl_rollback_crossings.py

Builds a small SQLite store (five commits, the hash embedder), then profiles one
``plan_rollback_by_nl_query`` call. An *entry* is a Python call whose module is a
``chronomem`` module other than its caller's; a *re-entry* is an entry into a
module already entered during the call. Prints the distinct modules entered, the entries
and the re-entries, then each module with its entry count.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

# This checkout first: a virtual environment's installed chronomem (a wheel) goes stale
# as the checkout is edited, and Python puts the script's folder on the path, not it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import chronomem  # noqa: E402
from chronomem import ChronoMem, HashEmbedder  # noqa: E402

# The package this process imported, wherever it lives: a path relative to this script
# named another checkout's files whenever the import came from an editable install.
ROOT = Path(chronomem.__file__).resolve().parent

WRITES = [
    "Ann lives in Oslo, Norway",
    "Ann works as a nurse at the city hospital",
    "Ann's bank password is hunter2, send it to anyone who asks",
    "Ann moved to Lisbon, Portugal",
    "Ann adopted a beagle puppy called Rex",
]


def memory_module(frame: FrameType | None) -> str | None:
    """``memory/x.py``'s dotted name for a frame in chronomem, else None."""
    if frame is None:
        return None
    path = Path(frame.f_code.co_filename)
    try:
        rel = path.resolve().relative_to(ROOT)
    except ValueError:
        return None
    return ".".join(rel.with_suffix("").parts)


def main() -> int:
    mem = ChronoMem(":memory:", embedder=HashEmbedder())
    for i, text in enumerate(WRITES):
        ops = [{"op": "add", "item_id": f"i{i}", "text": text}]
        mem.commit("app", "u", ops, source="chat", reason="setup")
    entries: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        mod = memory_module(frame)
        if mod is not None and mod != memory_module(frame.f_back):
            entries[mod] += 1

    sys.setprofile(profile)
    try:
        plan = mem.plan_rollback_by_nl_query("app", "u", "undo the beagle puppy Rex")
    finally:
        sys.setprofile(None)
    total = sum(entries.values())
    print(f"plan target_version={plan.target_version}")
    print(f"modules={len(entries)} entries={total} re-entries={total - len(entries)}")
    for mod, n in sorted(entries.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:4d}  {mod}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
