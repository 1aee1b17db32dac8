"""The README and docs/results.md quote the published board, never an older run.

Every interval figure (``71.1 [65.9, 76.6]``) in README.md's "Who wins" table and in
docs/results.md must occur in results/LEADERBOARD.md, so a rebuilt board with stale prose
fails here instead of shipping two sets of numbers.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO_ROOT

_INTERVAL = re.compile(r"\d+\.\d \[\d+\.\d, \d+\.\d\]")


def _readme_headlines() -> str:
    text = (REPO_ROOT / "README.md").read_text()
    return text.split("\n## Who wins", 1)[1].split("\n## ", 1)[0]


def _results_page() -> str:
    return (REPO_ROOT / "docs" / "results.md").read_text()


@pytest.mark.parametrize(
    ("where", "text", "at_least"),
    [("README.md, Who wins", _readme_headlines, 8), ("docs/results.md", _results_page, 20)],
)
def test_quoted_intervals_are_on_the_published_board(where, text, at_least):
    quoted = _INTERVAL.findall(text())
    assert len(quoted) >= at_least, f"{where} should quote the board's intervals"
    board = (REPO_ROOT / "results" / "LEADERBOARD.md").read_text()
    stale = sorted({q for q in quoted if q not in board})
    assert not stale, f"{where} quotes figures that are not on results/LEADERBOARD.md: {stale}"


def test_the_readme_stays_a_few_screens():
    lines = (REPO_ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md is {len(lines)} lines; move detail to docs/"


def test_every_docs_page_is_in_the_index_and_every_link_resolves():
    docs = REPO_ROOT / "docs"
    index = (docs / "README.md").read_text()
    for page in sorted(docs.glob("*.md")):
        if page.name != "README.md":
            assert f"]({page.name})" in index, f"docs/README.md does not link {page.name}"
    for page in [REPO_ROOT / "README.md", *docs.glob("*.md")]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            assert (page.parent / target).exists(), f"{page.name} links a missing {target}"
