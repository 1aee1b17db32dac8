"""Shared helpers for the data-builder tests (no conftest: imported explicitly)."""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
TINY_LOCOMO = FIXTURES / "locomo_tiny.json"
MAB_FIXTURES = FIXTURES / "mab"

# Anything that reads as a date, session number or dialog id.
DATE_LIKE = re.compile(
    r"\d|\b(January|February|March|April|May|June|July|August|September|October|November|December)\b"
)
