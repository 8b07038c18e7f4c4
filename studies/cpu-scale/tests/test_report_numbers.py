"""The report (studies/cpu-scale.md) says what the published pages and records say: its abstract's counts are the claims
page's tally, each verdict it quotes is the page's, and the numbers of its replacement finding recompute from the
published records."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from benchbackcompat.tooling import read_records

ROOT = Path(__file__).resolve().parents[3]
REPORT = (ROOT / "studies" / "cpu-scale.md").read_text()
CLAIMS = (ROOT / "leaderboard" / "claims.md").read_text()
PAGES = "\n".join(page.read_text() for page in sorted((ROOT / "leaderboard" / "claims").glob("*.md")))
ABSTRACT_CATEGORIES = {"reproduced": "reproduced", "holds in the same direction with a smaller effect":
                       "same direction, smaller effect", "not reproduced": "not reproduced",
                       "undecidable": "undecidable", "not run yet": "not run yet", "not testable": "not testable here"}


def tally() -> dict[str, int]:
    """The claims page's tally: category -> paper claims."""
    rows = re.findall(r"^\| ([a-z ,]+) \| (\d+) \| \d+ \|$", CLAIMS, flags=re.M)
    return {category: int(count) for category, count in rows}


def test_the_abstract_counts_are_the_claims_pages_tally():
    abstract = " ".join(REPORT.split("**Abstract.**", 1)[1].split("\n\n", 1)[0].split())
    total = int(re.search(r"Of the (\d+) claims", abstract)[1])
    said = {}
    for number, words in re.findall(r"(\d+) (?:are |holds? )?(reproduced|in the same direction with a smaller "
                                     r"effect|not reproduced|undecidable|not run yet|not testable)", abstract):
        said["holds in the same direction with a smaller effect" if words.startswith("in the same") else words] = \
            int(number)
    published = tally()
    assert total == published["all"]
    assert said == {words: published[category] for words, category in ABSTRACT_CATEGORIES.items()}


def page_verdict(claim: str) -> str:
    """The verdict the digest prints for ``claim`` (its first bold phrase after the statement)."""
    line = re.search(rf"^- \*\*{re.escape(claim)}\*\* \(.*$", PAGES, flags=re.M)
    assert line, f"{claim} is not on the claims pages"
    return re.findall(r"\*\*([^*]+)\*\*", line[0])[1]


def quoted_verdicts() -> list[tuple[str, str]]:
    """(claim, verdict) of each row of the report's verdict tables that names a single claim."""
    rows = re.findall(r"^\| ([a-z0-9-]+)(?: \((?:baseline|variant)\))? \| \*\*([^*]+)\*\* \|", REPORT, flags=re.M)
    return [(claim, verdict) for claim, verdict in rows if claim != "claim"]


@pytest.mark.parametrize(("claim", "verdict"), quoted_verdicts())
def test_each_verdict_the_report_quotes_is_the_pages(claim, verdict):
    assert verdict == page_verdict(claim)


def test_the_report_quotes_verdicts_of_every_paper():
    assert len(quoted_verdicts()) >= 20


@pytest.mark.filterwarnings("ignore:Mean of empty slice")  # the matrices' upper triangle is empty
def test_the_replacement_finding_recomputes_from_the_records():
    """Mean over seeds (top-1 %) of the iam-cl2r-7 matrices with and without replacements: the self-tests at the
    replaced tasks and the last model's cross-tests that the report's bullet quotes."""
    records = [r for r in read_records(ROOT / "leaderboard" / "records")
               if r.scenario == "iam-cl2r-7" and r.status == "finished" and r.method in ("hoc", "dsimplex-fd")]

    def mean_matrix(method: str, replacements: list[int]) -> np.ndarray:
        chosen = [np.array(r.matrices["top1"], dtype=float) for r in records
                  if r.method == method and list(r.config["replacements"]) == replacements]
        assert chosen
        return np.nanmean(np.stack(chosen), axis=0)

    bullet = " ".join(REPORT.split("**Replacing d-Simplex-FD's models costs it 9 points of AA.**", 1)[1]
                      .split("\n- ", 1)[0].split())
    fd_with, fd_without = mean_matrix("dsimplex-fd", [3, 5]), mean_matrix("dsimplex-fd", [])
    hoc_with, hoc_without = mean_matrix("hoc", [3, 5]), mean_matrix("hoc", [])
    quoted = [*fd_without.diagonal()[[2, 4]], *fd_with.diagonal()[[2, 4]], *fd_without[-1, :3], *fd_with[-1, :3],
              hoc_without[0, 0], hoc_without[-1, -1], hoc_with[2, 2], hoc_without[2, 2], hoc_with[4, 4],
              hoc_without[4, 4]]
    numbers = [float(n) for n in re.findall(r"\b\d+\.\d\b", bullet)]
    assert numbers == [round(float(v), 1) for v in quoted]


def live_areas(metric: str) -> dict[tuple[str, str], float]:
    """(method, order) -> the area under the backfilling curve of ``metric`` on ext-class's live-index table (the
    records with the oracle bound among their orders), mean over seeds."""
    found: dict[tuple[str, str], list[float]] = {}
    for record in read_records(ROOT / "leaderboard" / "records"):
        orders = ((record.config.get("backfill") or {}).get("orders") or [])
        if record.scenario != "ext-class" or record.status != "finished" or "oracle-bound" not in orders:
            continue
        for order, area in record.backfill["pairs"][0]["auc"][metric].items():
            found.setdefault((record.method, order), []).append(area)
    return {key: float(np.mean(areas)) for key, areas in found.items()}


ORDERS_SECTION = REPORT.split("### Refresh orders: the literature's, a greedy oracle and the ceiling", 1)[1] \
    .split("\n### ", 1)[0]


@pytest.mark.parametrize(("quoted", "metric", "method", "order"), [
    ("CoReS 76.9 against 85.5", "cmc@1", "cores", "uncertainty"), ("BCT 80.8 against 87.0", "cmc@1", "bct", "uncertainty"),
    ("independent\n  70.8 against 82.7", "cmc@1", "independent", "uncertainty"),
    ("HOC 79.4 against 76.1", "cmc@1", "hoc", "class-balanced"), ("PSP 77.3\n  against 69.3", "map", "psp", "class-distance"),
])
def test_the_refresh_orders_quotes_recompute_from_the_records(quoted, metric, method, order):
    areas = live_areas(metric)
    numbers = [float(n) for n in re.findall(r"\d+\.\d", quoted)]
    assert quoted in ORDERS_SECTION
    assert numbers == [round(areas[method, order], 1), round(areas[method, "random"], 1)]


def test_the_refresh_orders_counts_recompute_from_the_records():
    cmc, average_precision = live_areas("cmc@1"), live_areas("map")
    methods = sorted({method for method, _ in cmc})

    def below(areas: dict, order: str) -> int:
        return sum(areas[m, order] < areas[m, "random"] for m in methods)

    section = " ".join(ORDERS_SECTION.split())
    assert len(methods) == 19 and "the 19 methods with curves" in section
    assert f"is below random for {below(cmc, 'uncertainty')} of them" in section
    assert f"`class-distance` order is below random for {below(cmc, 'class-distance')}" in section
    assert f"`learned` order for {below(cmc, 'learned')}" in section
    assert f"is above random for {len(methods) - below(cmc, 'class-balanced')} of 19" in section
    assert f"raises the area for {len(methods) - below(cmc, 'oracle')} methods" in section
    assert f"above random in mAP for {len(methods) - below(average_precision, 'class-distance')} of the 19" in section
    bound = [cmc[m, "oracle-bound"] for m in methods]
    assert f"Its area is {min(bound):.1f} to {max(bound):.1f}" in section
    oracle_losers = {m for m in methods if cmc[m, "oracle"] < cmc[m, "random"]}
    assert oracle_losers == {"cores", "etf-ce", "independent"} and f"lowers it for {len(oracle_losers)}" in section
    gains = [cmc[m, "class-balanced"] - cmc[m, "random"] for m in methods]
    assert f"by {min(g for g in gains if g > 0):.1f} to {max(gains):.1f} points" in section


def test_the_index_gaps_the_report_quotes_recompute_from_the_records():
    """Exact − IVF-PQ (points) on ext-class's live-index table, per seed: PSP's cross-test C[1][0] and HBCT's self-tests
    (mean of C[0][0] and C[1][1]), with HBCT's 95% t-interval over seeds."""
    from scipy import stats

    def gaps(method: str, entries: list[tuple[int, int]]) -> list[float]:
        found = []
        for record in read_records(ROOT / "leaderboard" / "records"):
            orders = (record.config.get("backfill") or {}).get("orders") or []
            if record.scenario == "ext-class" and record.method == method and "oracle-bound" in orders:
                exact, through = record.matrices["cmc@1"], record.index["matrices"]["ivf-pq"]["cmc@1"]
                found.append(float(np.mean([exact[t][k] - through[t][k] for t, k in entries])))
        return found

    section = " ".join(REPORT.split("### Retrieval through an index", 1)[1].split("\n### ", 1)[0].split())
    psp = gaps("psp", [(1, 0)])
    assert len(psp) == 3 and f"PSP {np.mean(psp):.1f} on the cross-tests" in section
    hbct = gaps("hbct", [(0, 0), (1, 1)])
    half = stats.t.ppf(0.975, len(hbct) - 1) * np.std(hbct, ddof=1) / np.sqrt(len(hbct))
    assert f"+{np.mean(hbct):.1f} [+{np.mean(hbct) - half:.1f}, +{np.mean(hbct) + half:.1f}]" in section
