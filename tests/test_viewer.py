"""The results viewer (chronobench/viewer/): `view` writes a static site from published
and local runs, never pooling two builds (the tiny fixture apart from real data);
`show` prints one query's story. The real-browser test is tests/test_viewer_browser.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chronobench.results.per_query import QUERIES_FILE, QueryFile
from tests.conftest import REPO_ROOT


@pytest.fixture(scope="module")
def results(tiny_run, tmp_path_factory) -> Path:
    """A results folder: two tiny-fixture cells (ChronoMem with RQ1, a floor) as local
    runs, and a copy of the ChronoMem cell posing as a published run of another build."""
    out = tmp_path_factory.mktemp("viewer") / "results"
    cells = [
        tiny_run("task=all", "system=chronomem"),
        tiny_run("task=generation", "system=floor_always_no"),
    ]
    for cell in cells:
        shutil.copytree(cell, out / "runs" / cell.name)
    other = out / "published" / "locomo-session__chronomem__other-build__0123456789"
    shutil.copytree(cells[0], other)
    man = json.loads((other / "manifest.json").read_text())
    man["run_id"] = other.name
    man["dataset"]["manifest_sha256"] = man["dataset"]["source_sha256"] = "f" * 64
    man["spec"]["dataset"]["fixture"] = False
    man["spec"]["dataset"]["source"] = None
    (other / "manifest.json").write_text(json.dumps(man))
    return out


def test_view_writes_a_site_that_keeps_builds_apart(results: Path, tmp_path: Path, capsys) -> None:
    from chronobench.commands import main

    site = tmp_path / "site"
    assert main(["view", "--results", str(results), "--out", str(site)]) == 0
    assert "3 runs, 2 builds" in capsys.readouterr().out
    index = (site / "index.html").read_text()
    # Real data first, then the fixture, each its own section, the fixture marked.
    real = index.index('<h2 id="locomo-ffffffff"')
    fixture = index.index("test fixture, not a result</h2>")
    assert real < fixture
    sections = re.split(r"<h2 id=", index)[1:]
    assert len(sections) == 2
    real_part, fixture_part = sections
    assert "floor:" not in real_part  # the fixture's floor is never drawn beside real data
    assert "A test fixture" in fixture_part
    # The summary table: RQ1-RQ3 rows with CIs, the floor beside ChronoMem, and the plots.
    for text in (
        "RQ1 R@1 (built, session)",
        "RQ2 RC-QA",
        "RQ3 last-session coverage",
        "best floor",
    ):
        assert text in fixture_part
    assert re.search(r"ChronoMem</a></td><td class=\"num\">[\d.]+ \[[\d.]+, [\d.]+\]", fixture_part)
    assert "floor:" in fixture_part
    assert fixture_part.count("<svg") >= 3 and real_part.count("<svg") >= 3
    # Offline: nothing is fetched from elsewhere.
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert "<script src" not in text and "<link" not in text
        assert not re.search(r"(src|href)=\"https?://", text)
    runs = sorted(p.name for p in (site / "runs").iterdir())
    assert len(runs) == 3
    lists = list((site / "queries").iterdir())
    assert len(lists) == 2  # one request set per build
    full = next(p for p in results.glob("runs/*") if "selection+qa+summary" in p.name)
    assert len(list(site.glob("q/*/*.html"))) == 2 * len(QueryFile(full / QUERIES_FILE).queries)


def test_query_page_tells_the_story(results: Path, tmp_path: Path) -> None:
    from chronobench.viewer.site import build_site

    build_site(results, tmp_path)
    full = next(p for p in results.glob("runs/*") if "selection+qa+summary" in p.name)
    qf = QueryFile(full / QUERIES_FILE)
    q = qf.queries[0]
    pages = [p for p in tmp_path.glob("q/*/*.html") if q["request"] in p.read_text()]
    assert len(pages) == 2  # the fixture's and the other build's, never one page
    pages = [p for p in pages if "floor:" in p.read_text()]
    assert len(pages) == 1
    text = pages[0].read_text()
    gold = qf.version(q["stream_id"], q["gold"])
    assert f"v{q['gold']} (session {gold['session']}, {gold['date']})" in text
    assert gold["summary"] in text
    assert "BM25-only" in text and "floor:" in text  # selectors and both systems
    for p in q["probes"]:
        assert qf.item(q["stream_id"], p["item"])["question"].replace("'", "&#x27;") in text


def test_show_prints_the_story(results: Path, capsys) -> None:
    from chronobench.commands import main

    full = next(p for p in results.glob("runs/*") if "selection+qa+summary" in p.name)
    qf = QueryFile(full / QUERIES_FILE)
    q = qf.queries[0]
    tail = "/".join(q["query_id"].split("/")[-2:])
    assert main(["show", full.name[-10:], tail, "--results", str(results)]) == 0
    out = capsys.readouterr().out
    gold = qf.version(q["stream_id"], q["gold"])
    assert f"request {q['request']}" in out
    assert (
        f"gold    v{q['gold']} (session {gold['session']}, {gold['date']}): {gold['summary']}"
        in out
    )
    assert "selector bm25" in out and "system chronomem" in out
    for p in q["probes"]:
        assert f"answer: {p['answer']}" in out
    assert main(["show", "no-such-run", tail, "--results", str(results)]) == 2
    assert "no run 'no-such-run'" in capsys.readouterr().err
    assert main(["show", full.name, "no/such/query", "--results", str(results)]) == 2
    assert "no query 'no/such/query'" in capsys.readouterr().err


def test_view_and_show_help_import_no_torch() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from chronobench.commands import main\n"
        "for cmd in ('view', 'show'):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        try:\n"
        "            main([cmd, '--help'])\n"
        "        except SystemExit:\n"
        "            pass\n"
        "print([m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True
    ).stdout
    assert out.strip() == "[]"


def test_view_of_a_missing_folder_is_a_clear_error(tmp_path: Path, capsys) -> None:
    from chronobench.commands import main

    assert main(["view", "--results", str(tmp_path / "nope")]) == 2
    assert "results folder" in capsys.readouterr().err
