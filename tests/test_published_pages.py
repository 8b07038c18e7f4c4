"""The published leaderboard read as a newcomer reads it: rendered from the stored records into a temporary
folder, every results table fits a screen (160 characters a row) in its default view, and so do the index and
the method pages; the overview names each scenario's winners and shows HBCT where it has a result, and the figures
are written. One rendering (about 30 s on one core) serves every check."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchbackcompat.report.merge import read_results
from benchbackcompat.cli.publish import planned_scenarios
from benchbackcompat.report.publish import write_leaderboard

RECORDS = Path(__file__).parents[1] / "leaderboard" / "records"
WIDTH = 160


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    if not RECORDS.is_dir():
        pytest.skip("no published records in this checkout")
    out = tmp_path_factory.mktemp("leaderboard")
    write_leaderboard(read_results([RECORDS]), out, "benchbackcompat leaderboard", "2000-01-01", planned=planned_scenarios)
    return out


def results_pages(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.glob("*.md")) if p.name not in ("README.md", "claims.md")]


def test_every_results_table_row_fits_160_characters_in_the_default_view(published):
    pages = results_pages(published)
    assert pages
    for page in pages:
        rows = [line for line in page.read_text().splitlines() if line.startswith("|")]
        wide = [line for line in rows if len(line) > WIDTH]
        assert rows and not wide, f"{page.name}: {len(wide)} rows wider than {WIDTH}, e.g. {wide[:1]}"


def test_index_and_method_pages_rows_fit_160_characters_and_every_method_has_a_page(published):
    methods = sorted((published / "methods").glob("*.md"))
    index = (published / "README.md").read_text()
    assert methods and all(f"(methods/{page.name})" in index for page in methods)
    for page in [published / "README.md", *methods]:
        rows = [line for line in page.read_text().splitlines() if line.startswith("|")]
        wide = [line for line in rows if len(line) > WIDTH]
        assert rows and not wide, f"{page.name}: {len(wide)} rows wider than {WIDTH}, e.g. {wide[:1]}"


def test_overview_names_each_scenarios_winners_and_footnotes_are_not_repeated(published):
    text = results_pages(published)[0].read_text()
    overview = text.split("## Overview", 1)[1].split("\n## ", 1)[0]
    findings = overview.split("Which methods break the most queries?")[0]  # the verdicts, before the flip findings
    verdicts = re.findall(r"^- \*\*([^*]+)\*\* \(table .*?\): (.*)$", findings, flags=re.M)
    scenarios = {title.split(" (")[0] for title in re.findall(r"^## (.+)$", text, flags=re.M)} - {"Overview"}
    assert {name.replace("\\", "") for name, _ in verdicts} == {s.replace("\\", "") for s in scenarios}
    assert all("best on" in v or "share rank 1" in v or "no method is ranked" in v for _, v in verdicts)
    notes = re.findall(r"^\[\^\d+\]: (.*)$", text, flags=re.M)
    assert len(notes) == len(set(notes)) and sum("P\\_com not shown" in n for n in notes) <= 1


def test_overview_shows_each_method_where_it_is_decidable_and_names_compatible_methods(published):
    # Each column is one scenario's headline table (4,000 steps for both and ext-class): there HBCT's P_com is
    # undecidable (its update is not significantly positive) and the cell says why; the scenario's verdict names the
    # 12,000-step table where HBCT is ranked first. On new-arch no P_com is decidable, and HBCT alone has a
    # cross-test significantly above its old self-test.
    text = (published / "embedded-cpu.md").read_text()
    overview = text.split("## Overview", 1)[1].split("\n## ", 1)[0]
    hbct = [cells for line in overview.splitlines() if line.startswith("| hbct ")
            for cells in [[c.strip() for c in line.split("|")[1:-1]]]]
    assert hbct[0][1:3] == ["– (update not > 0)", "– (update not > 0)"]  # both, ext-class at 4,000 steps
    assert "– (update not > 0)" in hbct[1]  # new-arch: said why
    both = next(line for line in overview.splitlines() if line.startswith("- **both** (table both (train.min"))
    assert "in the table both (train.min\\_steps=12000), hbct" in both and "is at rank 1" in both
    new_arch = next(line for line in overview.splitlines() if line.startswith("- **new-arch**"))
    named = new_arch.split("P\\_com is not shown: ")[1]
    assert named.startswith("hbct (") and named.count(" points)") == 1
