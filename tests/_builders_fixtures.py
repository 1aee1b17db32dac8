"""Shared helpers for the data-builder tests (no conftest: imported explicitly)."""

from __future__ import annotations

import os
import re
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
TINY_LOCOMO = FIXTURES / "locomo_tiny.json"
MAB_FIXTURES = FIXTURES / "mab"
REPO = Path(__file__).resolve().parents[1]

# Anything that reads as a date, session number or dialog id.
DATE_LIKE = re.compile(
    r"\d|\b(January|February|March|April|May|June|July|August|September|October|November|December)\b"
)


def real_locomo() -> Path | None:
    """locomo10.json from $CHRONOBENCH_LOCOMO or ../shared/data next to the repo, else None."""
    env = os.environ.get("CHRONOBENCH_LOCOMO")
    if env and Path(env).is_file():
        return Path(env)
    cand = REPO.parent / "shared" / "data" / "locomo10.json"
    return cand if cand.is_file() else None


SKIP_REASON = (
    "real LoCoMo not found: set CHRONOBENCH_LOCOMO or put locomo10.json in ../shared/data/"
)
