"""The leaderboard's HTML site (``site/`` of ``leaderboard --out``), read in a real browser: headless Chromium, driven
by Selenium, opens the site rendered from the small fixture records over ``file://``, sorts a column, filters to one
method and finds the numbers computed here by hand from the records. Skipped, with the reason, where no browser and
driver are installed (CI installs Debian's ``chromium`` and ``chromium-driver``). With ``BBC_SITE_SCREENSHOTS`` set
to a folder, the browser saves screenshots of the overview and of a filtered table there."""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import tempfile
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from benchbackcompat.report.merge import merge_records
from benchbackcompat.report.publish import write_leaderboard
from benchbackcompat.report.site import site_files
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.claims import load_claims
from test_statistics import _single

RECORDS = json.loads((Path(__file__).parent / "fixtures" / "leaderboard_records.json").read_text())
EVIL = "evil|<script>alert(1)</script>"  # a method name in the fixture records
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,900")


def values(scenario: str, method: str, statistic: str) -> list[float]:
    """The per-seed values of one statistic of one method's finished records (CMC@1), read from the records."""
    return [r["metrics"]["cmc@1"][statistic] for r in RECORDS
            if r["scenario"] == scenario and r["method"] == method and r["status"] == "finished"]


def shown(numbers: list[float], digits: int) -> str:
    """Mean ± standard deviation over seeds (records without per-query outcomes), or the one seed's value."""
    text = f"{statistics.fmean(numbers):.{digits}f}"
    return text + (f" ± {statistics.stdev(numbers):.{digits}f}" if len(numbers) > 1 else "")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("board")
    write_leaderboard(merge_records([("fixture", RECORDS)]), out, "benchbackcompat leaderboard", "2000-01-01")
    return out / "site"


@pytest.fixture(scope="module")
def browser() -> Iterator:
    webdriver = pytest.importorskip("selenium.webdriver", reason="Selenium is not installed (pip install -e '.[test]')")
    chromium = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    driver_path = shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        pytest.skip("no Chromium and chromedriver on PATH (Debian: apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in FLAGS:
        options.add_argument(flag)
    with tempfile.TemporaryDirectory() as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(options=options, service=Service(driver_path))
        try:
            yield driver
        finally:
            driver.quit()


def screenshot(driver, name: str) -> None:
    """The whole page as ``name`` in ``$BBC_SITE_SCREENSHOTS`` (nothing when it is not set)."""
    folder = os.environ.get("BBC_SITE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1400, min(max(height, 600), 4000))
        driver.save_screenshot(str(Path(folder) / name))
        driver.set_window_size(1400, 900)


def choose(driver, form_table: str, name: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    form = driver.find_element(By.CSS_SELECTOR, f'form.filters[data-table="{form_table}"]')
    Select(form.find_element(By.NAME, name)).select_by_value(value)


def visible_rows(driver, table: str) -> list[list[str]]:
    """The text of each cell of the rows of ``table`` that the browser shows, in their order (one round trip)."""
    return driver.execute_script(
        "return Array.from(document.getElementById(arguments[0]).tBodies[0].rows)"
        ".filter(row => row.getClientRects().length > 0)"
        ".map(row => Array.from(row.querySelectorAll('td')).map(cell => cell.innerText.trim()))", table)


def test_the_results_table_sorts_a_column_and_filters_to_one_method_in_a_browser(site, browser):
    from selenium.webdriver.common.by import By

    browser.get((site / "results.html").as_uri())
    choose(browser, "results", "scenario", "ext-class")
    choose(browser, "results", "statistic", "cross")
    header = browser.find_element(By.XPATH, "//table[@id='results']//th[starts-with(normalize-space(), 'value')]//button")
    header.click()  # ascending; cells without a number last
    rows = visible_rows(browser, "results")
    finished = sorted(((statistics.fmean(values("ext-class", m, "cross")), m) for m in ("independent", "l2", "flat")))
    assert [(row[2], row[5]) for row in rows[:3]] == [(m, shown(values("ext-class", m, "cross"), 2)) for _, m in finished]
    assert sorted(row[2] for row in rows[3:]) == sorted([EVIL, "unstable"]) and {row[5].split("[")[0] for row in rows[3:]} <= {"-", "nan"}
    header.click()  # descending: the largest first, still no number last
    assert [row[2] for row in visible_rows(browser, "results")[:3]] == [m for _, m in reversed(finished)]

    choose(browser, "results", "statistic", "")
    choose(browser, "results", "method", "l2")
    rows = visible_rows(browser, "results")
    assert rows and {row[2] for row in rows} == {"l2"}
    by_statistic = {row[3]: row[5] for row in rows}
    for key, header_text, digits in (("cross", "cross", 2), ("self", "self", 2), ("p_com", "P_com", 3)):
        assert by_statistic[header_text] == shown(values("ext-class", "l2", key), digits)
    assert browser.find_element(By.CSS_SELECTOR, 'form[data-table="results"] output').text.startswith(f"{len(rows)} of ")
    screenshot(browser, "filtered-table.png")


def test_the_overview_shows_each_methods_primary_statistic_and_escapes_record_text(site, browser):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    browser.get((site / "index.html").as_uri())
    rows = {row[0]: row[1:] for row in visible_rows(browser, "overview-embedded-quick-1")}
    # l2 has the highest P_com of the two methods with one (independent's is negative): rank 1, bold
    assert rows["l2"] == [shown(values("ext-class", "l2", "p_com"), 3) + " (1)"]
    assert rows["independent"] == [shown(values("ext-class", "independent", "p_com"), 3) + " (2)"]
    assert browser.find_element(By.XPATH, "//tr[@data-method='l2']/td/strong").text == shown(values("ext-class", "l2", "p_com"), 3)
    assert rows[EVIL] == ["- (not applicable)"]  # the name is text, not a script
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text
    screenshot(browser, "overview.png")


def test_a_results_page_filters_its_table_and_shows_its_figures(site, browser):
    from selenium.webdriver.common.by import By

    browser.get((site / "embedded-quick.html").as_uri())
    table = browser.find_element(By.CSS_SELECTOR, "section[id$='multi-step'] table").get_attribute("id")
    choose(browser, table, "method", "hoc")
    rows = visible_rows(browser, table)
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, f"#{table} thead th")]
    assert len(rows) == 1 and rows[0][0] == "hoc"
    assert rows[0][headers.index("AC (CMC@1)")] == shown(values("multi-step", "hoc", "AC"), 3)
    images = browser.find_elements(By.CSS_SELECTOR, "figure img")
    assert images and all(browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img)
                          for img in images)


class Cells(HTMLParser):
    """The text of every ``td`` of an HTML page, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self.cell is not None:
            self.rows[-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def test_every_number_of_the_site_is_on_the_markdown_page_and_no_record_text_is_markup(site):
    parser = Cells()
    parser.feed((site / "results.html").read_text())
    numbers = [row[5] for row in parser.rows if len(row) == 8 and re.match(r"-?\d", row[5])]
    page = (site.parent / "embedded-quick.md").read_text()
    assert numbers and [n for n in numbers if n not in page] == []
    for path in site.rglob("*.html"):
        assert "<script>alert" not in path.read_text(), path
    assert (site.parent / "README.md").read_text().count("(site/index.html)") == 1


CLAIMS = """
[paper]
title = "A <b>Paper</b>: its subtitle"
venue = "Venue 2026"

[[claim]]
id = "holds"
statement = "a above b"
where = "Table 1"
seeds = 6
deciding = "ext-class"
protocol = { kind = "ext-class", retrieval = [["loo", "cmc@1"]], eval_split = "test" }
compare = [{ a = "a", b = "b", statistic = "cross", effect = 2.0 }]

[[claim]]
id = "elsewhere"
statement = "a above b on tin"
where = "Table 2"
seeds = 6
deciding = "ext-class-tin"
protocol = { kind = "ext-class", retrieval = [["loo", "cmc@1"]], eval_split = "test" }
compare = [{ a = "a", b = "b", statistic = "cross", effect = 2.0 }]
"""


def pair(differences: list[float]) -> list[dict]:
    """Rows a and b of ext-class whose cross-tests (points) differ by ``differences``, seed by seed."""
    records = []
    for seed, difference in enumerate(differences):
        for method, cross in (("a", 50.0 + difference), ("b", 50.0)):
            record = _single(method, seed, 400, 200, 300, 200, 200, 300)
            record["metrics"]["cmc@1"]["cross"] = cross
            records.append(record)
    return records


def test_the_claims_digest_tallies_the_verdicts_and_gives_one_line_per_claim(tmp_path):
    (tmp_path / "claims.toml").write_text(CLAIMS)
    tables = build_tables(pair([3, 4, 5, 3, 4, 5]))  # a − b on cross: 4 points on average over six seeds
    pages = [(f"{t.dataset}-{t.preset}", [t]) for t in tables]
    text = site_files(pages, tmp_path, "2000-01-01", claims=[load_claims(tmp_path / "claims.toml")])["site/claims.html"]
    parser = Cells()
    parser.feed(text)
    tally = dict(re.findall(r"<tr><th>([^<]*)</th><td>(\d+)</td></tr>", text))  # category: paper claims
    assert (tally["reproduced"], tally["all"], sum(map(int, tally.values()))) == ("1", "2", 4)
    lines = {row[0]: row for row in parser.rows if len(row) == 4}
    assert lines["holds"][2] == "reproduced" and "a − b (cross): +4.00 [" in lines["holds"][3]
    assert lines["elsewhere"][2] not in ("reproduced", "") and "ext-class-tin" in lines["elsewhere"][3]
    assert "<b>" not in text and "A &lt;b&gt;Paper&lt;/b&gt;" in text
