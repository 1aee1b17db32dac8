"""The results site in a real browser: Debian's chromium and chromedriver, driven by
selenium. Built from a real run's per-query file (a tiny-fixture cell the runner ran),
opened from disk, it goes from the summary to the drill-down, filters it, and opens a
query page, checking the request, the versions and the answers shown.

Without a browser the test skips with the reason, except in CI
(``CHRONOBENCH_REQUIRE_BROWSER``, set by .ci/run, or ``CI``), where it fails.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from chronobench.results.per_query import QUERIES_FILE, QueryFile

#: Flags that run chromium headless here: no sandbox (root), no GPU, and nothing that
#: reaches the network.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        return "chromium is not installed (apt-get install chromium chromium-driver)"
    if not shutil.which("chromedriver"):
        return "chromedriver is not installed (apt-get install chromium-driver)"
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    why = _missing()
    if why:
        if os.environ.get("CHRONOBENCH_REQUIRE_BROWSER") or os.environ.get("CI"):
            pytest.fail(f"the viewer's browser test must run here: {why}")
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager download
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or ""
    for flag in FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    opts.add_argument("--window-size=1300,1000")
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def site(tiny_run, tmp_path_factory) -> tuple[Path, Path]:
    """(the site, the ChronoMem run folder): two real tiny-fixture cells, viewed."""
    from chronobench.viewer.site import build_site

    results = tmp_path_factory.mktemp("browser") / "results"
    full = tiny_run("task=all", "system=chronomem")
    for cell in (full, tiny_run("task=generation", "system=floor_always_no")):
        shutil.copytree(cell, results / "runs" / cell.name)
    out = results.parent / "site"
    build_site(results, out)
    return out, results / "runs" / full.name


def test_summary_to_query_page_in_a_browser(browser, site) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    out, run = site
    qf = QueryFile(run / QUERIES_FILE)
    wait = WebDriverWait(browser, 30)

    browser.get((out / "index.html").as_uri())
    assert browser.title == "chronobench results"
    summary = browser.find_element(By.CSS_SELECTOR, "table.summary").text
    assert "RQ2 RC-QA" in summary and "ChronoMem" in summary and "floor:" in summary
    # The strip above it: per question, the best system against the best floor.
    strip = browser.find_element(By.CSS_SELECTOR, "table.strip").text
    assert "RQ2 RC-QA" in strip and "floor: " in strip and "floor: floor:" not in strip
    assert "apart" in strip or "overlap" in strip
    assert browser.find_elements(By.CSS_SELECTOR, "svg rect.bar")

    browser.find_element(By.CSS_SELECTOR, "ul.drill a").click()
    wait.until(lambda d: d.title.startswith("Queries:"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#queries tbody tr")
    Select(browser.find_element(By.ID, "f-system")).select_by_visible_text("ChronoMem")
    shown = [r for r in rows if r.is_displayed()]
    assert len(shown) == len(qf.queries) < len(rows)
    assert browser.find_element(By.ID, "shown").text == str(len(shown))
    exact = sum(1 for q in qf.queries if q["outcome"] == "exact")
    Select(browser.find_element(By.ID, "f-outcome")).select_by_visible_text("exact")
    assert sum(1 for r in rows if r.is_displayed()) == exact
    Select(browser.find_element(By.ID, "f-outcome")).select_by_index(0)  # all outcomes

    first = next(r for r in rows if r.is_displayed())
    query_id = first.find_element(By.CSS_SELECTOR, "td:nth-child(2) a").text
    (q,) = qf.find(query_id)
    first.find_element(By.CSS_SELECTOR, "td:nth-child(2) a").click()
    wait.until(lambda d: d.title.startswith("Query:"))

    assert browser.find_element(By.ID, "request").text.strip('“”"') == q["request"]
    gold = qf.version(q["stream_id"], q["gold"])
    gold_text = browser.find_element(By.ID, "gold").text
    assert f"v{q['gold']} (session {gold['session']}, {gold['date']})" in gold_text
    assert gold["summary"] in gold_text
    chosen = browser.find_element(By.ID, "chosen").text
    for name, part in q["selectors"].items():
        assert f"v{part['chosen']} (session" in chosen, name
    assert f"v{q['chosen']} (session" in chosen
    details = browser.find_element(By.ID, "chronomem")
    assert details.get_attribute("open") is not None  # the first system is open
    # A link naming another system (the list's links do) opens that system's answers.
    closed = [d for d in browser.find_elements(By.CSS_SELECTOR, "details")
              if d.get_attribute("open") is None and d.get_attribute("id")]  # fmt: skip
    if closed:
        other = closed[0].get_attribute("id")
        page_url = browser.current_url.split("#", 1)[0]
        browser.get(f"{page_url}#{other}")
        assert browser.find_element(By.ID, other).get_attribute("open") is not None
        browser.get(page_url)
        details = browser.find_element(By.ID, "chronomem")
    answers = details.find_element(By.CSS_SELECTOR, "table.probes").text
    for p in q["probes"]:
        assert not p["answer"] or p["answer"].split()[0] in answers
        assert qf.item(q["stream_id"], p["item"])["question"] in answers


def test_a_long_drill_down_list_is_drawn_a_page_at_a_time(browser, site, tmp_path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from chronobench.viewer import drill
    from chronobench.viewer.site import build_site

    _, run = site
    results = run.parent.parent
    saved = drill.PAGE_ROWS
    drill.PAGE_ROWS = 2  # the tiny runs' lists are short: two rows make several pages
    try:
        build_site(results, tmp_path / "site")
    finally:
        drill.PAGE_ROWS = saved
    lists = sorted((tmp_path / "site" / "queries").glob("*.html"))
    browser.get(lists[0].as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "#queries tbody tr")
    assert len(rows) > 2
    pager = browser.find_element(By.ID, "pager")
    assert pager.is_displayed() and browser.find_element(By.ID, "prev").get_attribute("disabled")
    first = [r.text for r in rows if r.is_displayed()]
    assert len(first) == 2 and browser.find_element(By.ID, "shown").text == str(len(rows))
    browser.find_element(By.ID, "next").click()
    second = [r.text for r in rows if r.is_displayed()]
    assert len(second) == 2 and second != first
    assert browser.find_element(By.ID, "page").text.startswith("2 of ")
    # A filter starts again at its first page and counts every matching row.
    system = Select(browser.find_element(By.ID, "f-system"))
    system.select_by_index(1)
    wanted = system.first_selected_option.text
    matching = [r for r in rows if r.get_attribute("data-system") == wanted]
    assert browser.find_element(By.ID, "shown").text == str(len(matching))
    shown = [r for r in rows if r.is_displayed()]
    assert shown == matching[:2]


def test_a_list_split_by_system_opens_the_chosen_systems_page(browser, site, tmp_path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from chronobench.viewer import drill
    from chronobench.viewer.site import build_site

    _, run = site
    saved = drill.SPLIT_ROWS
    drill.SPLIT_ROWS = 1  # every list of the tiny runs is split
    try:
        build_site(run.parent.parent, tmp_path / "site")
    finally:
        drill.SPLIT_ROWS = saved
    first = sorted((tmp_path / "site" / "queries").glob("*[!0-9].html"))[0]
    browser.get(first.as_uri())
    system = Select(browser.find_element(By.ID, "f-system"))
    here = system.first_selected_option.text
    rows = browser.find_elements(By.CSS_SELECTOR, "#queries tbody tr")
    assert rows and {r.get_attribute("data-system") for r in rows} == {here}
    other = next(o.text for o in system.options if o.text != here)
    system.select_by_visible_text(other)
    WebDriverWait(browser, 30).until(lambda d: "~" in d.current_url)
    rows = browser.find_elements(By.CSS_SELECTOR, "#queries tbody tr")
    assert rows and {r.get_attribute("data-system") for r in rows} == {other}
    chosen = Select(browser.find_element(By.ID, "f-system")).first_selected_option.text
    assert chosen == other
