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
