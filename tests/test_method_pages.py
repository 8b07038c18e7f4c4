"""Per-method leaderboard pages (``methods/<name>.md``), rendered from the synthetic fixture records: every method
gets a page linked from the index and from its results page, with its tables, hyperparameters, paper, cost and
compatibility matrices (means and incompatible entries worked out by hand below)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchbackcompat.report.merge import merge_records
from benchbackcompat.report.methods import MethodInfo
from benchbackcompat.report.publish import write_leaderboard

FIXTURE = Path(__file__).parent / "fixtures" / "leaderboard_records.json"
L2 = MethodInfo("feature distance to the old model", "Some Paper (Someone et al., Venue'24).",
                {"weight": ("1.0", "weight of the distance term")})


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    records = json.loads(FIXTURE.read_text())
    for r in records:  # l2: 90 s and 210 s of compute (1.5 and 3.5 minutes)
        if r["method"] == "l2":
            r["timings"] = {"train_s": 60.0 + 120 * r["seed"], "eval_s": 30.0, "total_s": 1.0}
    out = tmp_path_factory.mktemp("leaderboard")
    earlier = [*records, {**records[0], "method": "gone", "key": "0" * 16}]  # an earlier rendering had a method "gone"
    write_leaderboard(merge_records([("fixture", earlier)]), out, "benchbackcompat leaderboard", "2000-01-01")
    assert (out / "methods" / "gone.md").is_file()
    write_leaderboard(merge_records([("fixture", records)]), out, "benchbackcompat leaderboard", "2000-01-01",
                      methods={"l2": L2})
    return out


def table_lines(text: str, heading: str) -> list[str]:
    """The lines of the first table after ``heading``."""
    block = next(b for b in text.split(heading, 1)[1].split("\n\n") if b.startswith("|"))
    return block.splitlines()


def test_every_method_has_a_page_linked_from_the_index_and_its_results_page(rendered):
    pages = sorted(p.name for p in (rendered / "methods").glob("*.md"))
    assert len(pages) == 6 and "gone.md" not in pages  # independent, l2, flat, hoc, unstable, the evil name
    assert {"independent.md", "l2.md", "flat.md", "hoc.md", "unstable.md"} <= set(pages)
    for index in ("README.md", "embedded-quick.md"):
        linked = set(re.findall(r"\]\(methods/([^)]+)\)", (rendered / index).read_text()))
        assert linked == set(pages), index
    evil = next(p for p in pages if p.startswith("evil"))
    assert "<script>" not in (rendered / "methods" / evil).read_text()


def test_method_page_holds_its_tables_hyperparameters_paper_and_cost(rendered):
    text = (rendered / "methods" / "l2.md").read_text()
    assert "[Index](../README.md)" in text and "(../embedded-quick.md)" in text
    assert "feature distance to the old model  \nPaper: Some Paper (Someone et al., Venue'24)." in text
    assert "- **weight** = 1.0 (default 1.0): weight of the distance term" in text
    assert "2 finished cells with timings: 2.5 minutes of compute per cell on average" in text
    assert "5.0 minutes in all" in text
    rows = [re.split(r"\s*\|\s*", line)[1:-1] for line in table_lines(text, "### [embedded-quick]")[2:]]
    # the table's title carries a row's setting only where several settings share it, never the page's method again
    assert [(r[0], r[1]) for r in rows] == [("ext-class", "P\\_com (CMC@1)")]
    assert rows[0][3].startswith("1 of ") and rows[0][5] == "2.5"  # best P_com of the table; minutes per cell
    unknown = (rendered / "methods" / "flat.md").read_text()
    assert "Its plugin was not installed where these pages were rendered" in unknown


def test_method_page_matrices_are_the_mean_over_seeds_with_incompatible_entries_marked(rendered):
    text = (rendered / "methods" / "independent.md").read_text()
    # ext-class: [[30, -], [10, 40]] and [[30, -], [12, 42]]; 11 <= 30: incompatible
    single = table_lines(text, "### ext-class · embedded-quick · independent")
    assert [re.split(r"\s*\|\s*", line)[1:-1] for line in single[2:]] == [["1", "30.0", ""], ["2", "11.0 ×", "41.0"]]
    # multi-step (seeds 0 and 1 finished): mean [[51], [21, 59], [24.5, 29, 68]]; every k < t entry is below C[k][k]
    multi = table_lines(text, "### multi-step · embedded-quick · independent")
    assert [re.split(r"\s*\|\s*", line)[1:-1] for line in multi[2:]] == [
        ["1", "51.0", "", ""], ["2", "21.0 ×", "59.0", ""], ["3", "24.5 ×", "29.0 ×", "68.0"]]
    for link in re.findall(r"\]\((\.\./figures/[^)]+)\)", text):
        assert (rendered / "methods" / link).is_file()


def test_method_page_rows_fit_160_characters(rendered):
    for page in (rendered / "methods").glob("*.md"):
        assert all(len(line) <= 160 for line in page.read_text().splitlines() if line.startswith("|")), page.name


def test_installed_methods_reads_what_the_plugin_declares():
    from benchbackcompat.cli.publish import installed_methods
    from benchbackcompat.report.describe import paper
    from benchbackcompat.execution.plugin_host import PluginHost

    found = installed_methods({"l2", "no-such-method"})
    assert set(found) == {"l2"}
    cls = PluginHost().method_class("l2")
    assert found["l2"].paper == paper(cls) and found["l2"].description == cls.description
    assert set(found["l2"].params) == set(cls.Params.model_fields)
