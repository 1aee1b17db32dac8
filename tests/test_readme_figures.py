"""The README's results section quotes the published board, never an older run.

Every interval figure (``71.1 [65.9, 76.6]``) in README.md's "Results" section must occur
in results/LEADERBOARD.md, so a rebuilt board with a stale README fails here instead of
shipping two sets of numbers.
"""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT

_INTERVAL = re.compile(r"\d+\.\d \[\d+\.\d, \d+\.\d\]")


def _results_section() -> str:
    text = (REPO_ROOT / "README.md").read_text()
    return text.split("\n## Results", 1)[1].split("\n## ", 1)[0]


def test_readme_results_quote_the_published_board():
    section = _results_section()
    quoted = _INTERVAL.findall(section)
    assert len(quoted) >= 5, "README's Results section should quote the board's intervals"
    board = (REPO_ROOT / "results" / "LEADERBOARD.md").read_text()
    stale = sorted({q for q in quoted if q not in board})
    assert not stale, f"README.md quotes figures that are not on results/LEADERBOARD.md: {stale}"
