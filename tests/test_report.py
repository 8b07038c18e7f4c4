"""Leaderboard rendering against a hand-made fixture of stored records (tests/fixtures/leaderboard_records.json)."""
from __future__ import annotations

import copy
import csv
import io
import json
import re
import statistics
from pathlib import Path

import numpy as np
import pytest

from benchbackcompat.report import leaderboard_tables
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.ranking import best_ids, rank_rows
from benchbackcompat.report.table_data import Row, Stat, Table
from benchbackcompat.report.columns import STATISTICS, Column, Statistic
from benchbackcompat.report.exports import csv_export, json_export
from benchbackcompat.report.figures import incompatible, matrices_figure, mean_matrix
from benchbackcompat.report.markdown import escape, plain_label, slug
from benchbackcompat.report.merge import merge_records
from benchbackcompat.report.publish import code_block, write_leaderboard

FIXTURE = Path(__file__).parent / "fixtures" / "leaderboard_records.json"
EVIL = "evil|<script>alert(1)</script>"


@pytest.fixture
def records() -> list[dict]:
    return json.loads(FIXTURE.read_text())


def cells(line: str) -> list[str]:
    """The cells of a Markdown table row, split on unescaped pipes."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def table_rows(markdown: str, heading: str) -> dict[str, list[str]]:
    """Rows of the table under ``heading``, by their method cell (footnote marks removed), header included."""
    block = markdown.split(heading, 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in block.splitlines():
        if line.startswith("|") and not line.startswith("|--"):
            row = cells(line)
            rows[re.sub(r"\[\^\d+\]", "", row[0])] = row
    return rows


def footnotes(markdown: str) -> dict[str, str]:
    return dict(re.findall(r"^\[\^(\d+)\]: (.*)$", markdown, flags=re.M))


def test_single_update_table_matches_hand_computed_values(records):
    text = leaderboard_tables(records)
    rows = table_rows(text, "### ext-class")
    assert rows["method"] == ["method", "rank", "ranks", "self (cmc@1)", "cross (cmc@1)", "P_up (cmc@1)",
                              "P_com (cmc@1)", "min", "seeds"]
    sd = statistics.stdev
    # the fixture stores no per-query outcomes (nor timings), so cells show mean ± std over seeds
    # independent: self 40, 42; cross 10, 12; P_com (10-30)/(40-30) = -2 and (12-30)/(42-30) = -1.5
    # ranks: the rank by mean over seed resamples, always 2 for independent (its P_com is below l2's at every seed)
    assert rows["independent"] == ["independent", "2", "2", f"**41.00 ± {sd([40, 42]):.2f}**", f"11.00 ± {sd([10, 12]):.2f}",
                                   "**0.000 ± 0.000**", f"-1.750 ± {sd([-2, -1.5]):.3f}", "-", "2"]
    # l2: P_up (38-40)/40, (36-42)/42; P_com (33-30)/10, (35-30)/12: the primary statistic, so rank 1
    p_up, p_com = [-2 / 40, -6 / 42], [3 / 10, 5 / 12]
    assert rows["l2"] == ["l2", "1", "1", "37.00 ± 1.41", "**34.00 ± 1.41**", f"{statistics.fmean(p_up):.3f} ± {sd(p_up):.3f}",
                          f"**{statistics.fmean(p_com):.3f} ± {sd(p_com):.3f}**", "-", "2"]
    # flat: one seed (no std); reference self = old self, so P_com is "–" with the table's one footnote on
    # undecidable updates, and the row is not ranked (the others are ranked by P_com)
    assert rows["flat"][:6] == ["flat", "-", "-", "30.00", "31.00", "**0.000**"] and rows["flat"][8] == "1"
    notes = footnotes(text)
    mark = re.search(r"–\[\^(\d+)\]", rows["flat"][6]).group(1)
    assert notes[mark].startswith("–: P\\_com not shown: the update it divides by, reference self − old self")
    context = table_rows(text, "The self-tests P\\_com and P\\_up divide by:")
    assert context["method"] == ["method", "old self (cmc@1)", "ref self (cmc@1)", "seeds"]
    assert context["flat"][1:3] == ["30.00", "30.00"] and context["l2"][1:3] == ["30.00 ± 0.00", "41.00 ± 1.41"]
    # order: ranked rows by rank then name, unranked rows last
    assert [r[0].split("[")[0] for r in list(rows.values())[1:]] == ["l2", "independent", escape(EVIL), "flat", "unstable"]


def test_dash_and_nan_cells_carry_footnotes_saying_why(records):
    text = leaderboard_tables(records)
    rows = table_rows(text, "### ext-class")
    notes = footnotes(text)
    evil = rows[escape(EVIL)]
    assert evil[1] == "-" and evil[-1] == "0 of 1"
    assert all(c == "-" for c in evil[2:8])  # one reason for the whole row: one footnote, on its label
    assert "not-applicable: needs a \\*replay\\* memory \\| &lt;b>cl2r&lt;/b> only" in notes[evil[0].split("[^")[-1][:-1]]
    unstable = rows["unstable"]  # diverged runs show nan, as in the papers
    assert all(c == "nan" for c in unstable[3:7])
    assert notes[unstable[0].split("[^")[-1][:-1]] == "unstable: diverged: the loss is nan at epoch 2"


def test_multi_task_table_partial_divergence_and_seed_counts(records):
    text = leaderboard_tables(records)
    rows = table_rows(text, "### multi-step")
    assert rows["method"][3:6] == ["AC (cmc@1)", "AA (cmc@1)", "ACA (cmc@1)"]
    # hoc: AC (3/3, 2/3), AA (349/6, 329/6), ACA ((55+52+62)/3, (50+60)/3)
    ac, aa, aca = [1, 2 / 3], [349 / 6, 329 / 6], [169 / 3, 110 / 3]
    assert rows["hoc"] == ["hoc", "1", rows["hoc"][2], *(f"**{statistics.fmean(v):.{d}f} ± {statistics.stdev(v):.{d}f}**"
                                         for v, d in ((ac, 3), (aa, 2), (aca, 2))), "-", "2"]
    independent = rows["independent"]
    assert independent[0].startswith("independent[^") and independent[-1] == "2 of 3"
    assert independent[4] == f"{statistics.fmean([255 / 6, 250 / 6]):.2f} ± {statistics.stdev([255 / 6, 250 / 6]):.2f}"
    assert "seed 2 diverged: the loss is inf at epoch 5" in footnotes(text)[independent[0].split("[^")[1][:-1]]


def test_metric_direction_is_declared_not_assumed():
    lower = Column("loss", Statistic("x", "x", False, 2, "a cost"))
    higher = Column("acc", Statistic("y", "y", True, 2, "an accuracy"))
    rows = [Row(m, m, {}, [{"status": "finished", "seed": 0}], cells={lower.id: Stat((x,)), higher.id: Stat((y,))})
            for m, x, y in (("a", 1.0, 10.0), ("b", 2.0, 30.0), ("c", 3.0, 20.0))]
    table = Table("s", "multi-step", "d", "p", {}, "", [lower], rows)
    assert {table.rows[i].method for i in best_ids(table, lower)} == {"a"}
    table.columns = [higher]
    assert {table.rows[i].method for i in best_ids(table, higher)} == {"b"}


def test_rank_follows_the_primary_statistic_then_the_tie_breaker():
    ac, aa, aca = (Column("cmc@1", STATISTICS[key]) for key in ("AC", "AA", "ACA"))
    values = (("a", 0.5, 40.0, 90.0), ("b", 1.0, 30.0, 10.0), ("c", 0.5, 45.0, 0.0))
    rows = [Row(m, m, {}, [{"status": "finished", "seed": 0}],
                cells={ac.id: Stat((x,)), aa.id: Stat((y,)), aca.id: Stat((z,))}) for m, x, y, z in values]
    table = Table("s", "multi-step", "d", "p", {}, "", [ac, aa, aca], rows)
    rank_rows(table)  # AC first (b), then AA breaks the tie of a and c; ACA plays no part
    assert [(r.method, r.rank) for r in table.rows] == [("b", 1), ("c", 2), ("a", 3)]


def test_escaping_of_plugin_provided_text():
    assert escape("a|b") == "a\\|b" and escape("<script>x</script>") == "&lt;script>x&lt;/script>"
    assert escape("two\nlines [link](x) *b* `c` $m$") == "two lines \\[link\\](x) \\*b\\* \\`c\\` \\$m\\$"
    assert slug(EVIL) != slug("evil-script-alert-1-script") and re.fullmatch(r"[a-z0-9.-]+", slug(EVIL))
    assert plain_label("a$\\frac{$") == "a\\$\\frac{\\$"
    assert code_block("a ``` b") == "````\na ``` b\n````"


def assert_pages_are_inert(folder: Path) -> None:
    """No raw HTML outside code blocks, and every table row has as many cells as its header."""
    for page in folder.glob("*.md"):
        text = re.sub(r"^(`{3,})\n.*?\n\1$", "", page.read_text(), flags=re.M | re.S)
        assert "<script" not in text and "<b>" not in text, page
        for block in re.findall(r"(?:^\|.*\n)+", text, flags=re.M):
            assert len({len(cells(line)) for line in block.splitlines()}) == 1, block


def test_seeds_are_pooled_only_across_identical_configurations(records):
    variant = copy.deepcopy([r for r in records if r["label"] == "ext-class/l2/seed0"][0])
    variant["key"], variant["config"]["train"]["epochs"] = "e0000000000000ff", 1
    variant["metrics"]["cmc@1"]["cross"] = 90.0
    tables = build_tables([*records, variant])
    titles = sorted(t.title for t in tables if t.scenario == "ext-class")
    assert titles == ["ext-class (train.epochs=1)", "ext-class (train.epochs=6)"]
    short = next(t for t in tables if t.title == "ext-class (train.epochs=1)")
    assert [r.method for r in short.rows] == ["l2"] and short.rows[0].cells["cmc@1:cross"] == Stat((90.0,))


def test_exports_hold_the_same_numbers(records):
    tables = build_tables(records)
    rows = list(csv.DictReader(io.StringIO(csv_export(tables))))
    l2 = {r["statistic"]: r for r in rows if r["scenario"] == "ext-class" and r["method"] == "l2"}
    assert float(l2["cross"]["mean"]) == 34.0 and float(l2["p_com"]["mean"]) == pytest.approx((0.3 + 5 / 12) / 2)
    assert l2["cross"]["higher_is_better"] == "True" and l2["cross"]["n"] == "2" and l2["cross"]["rank"] == "1"
    flat = {r["statistic"]: r for r in rows if r["method"] == "flat"}
    # a word for the missing number (not a dash a spreadsheet reads as a formula), the reason in the note
    assert flat["p_com"]["mean"] == "" and flat["p_com"]["missing"] == "update < 10 pts" and "old self = 0.00" in flat["p_com"]["note"]
    assert {r["chance_level"] for r in rows} == {"False"}
    data = json.loads(json_export(tables, {"date": "2000-01-01"}))
    hoc = next(r for t in data["tables"] if t["scenario"] == "multi-step" for r in t["rows"] if r["method"] == "hoc")
    assert hoc["chance_level"] is False and hoc["chance_reason"] is None
    assert hoc["cells"]["cmc@1:AC"]["values"] == [1.0, pytest.approx(2 / 3)] and hoc["seeds"] == [0, 1]


def test_matrix_figure_marks_incompatible_entries(records, tmp_path):
    table = next(t for t in build_tables(records) if t.scenario == "multi-step")
    hoc = next(r for r in table.rows if r.method == "hoc")
    M = mean_matrix(hoc, "cmc@1")
    assert M[2][1] == 61.0 and np.isnan(M[0][1])
    assert not incompatible(M).any()  # 52.5 > 49, 49.5 > 49, 61 > 59
    independent = next(r for r in table.rows if r.method == "independent")
    assert incompatible(mean_matrix(independent, "cmc@1")).sum() == 3
    assert incompatible(np.array([[50.0, np.nan], [50.0, 60.0]]))[1][0]  # ties are not compatible (strict)
    path = matrices_figure(table, "cmc@1", tmp_path / "m.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_leaderboard_folder_is_reproducible_apart_from_the_date(records, tmp_path):
    for r in records:  # a name that would be invalid mathtext in a figure title
        r["method"] = r["method"].replace("flat", "fl$\\frac{at")
    merged = merge_records([("fixture", records)])
    files = write_leaderboard(merged, tmp_path, "benchbackcompat leaderboard --results r --out o", "2000-01-01")
    first = {p.relative_to(tmp_path): p.read_bytes() for p in files}
    names = {p.name for p in first}
    assert {"README.md", "embedded-quick.md", "leaderboard.csv", "leaderboard.json"} <= names
    assert {n.rsplit("-", 1)[1] for n in names if n.endswith(".png")} == {"matrices.png", "margin.png", "aa.png"}
    page = first[Path("embedded-quick.md")].decode()
    for link in re.findall(r"\]\((figures/[^)]+)\)", page):
        assert (tmp_path / link).is_file()
    assert "> Generated by `benchbackcompat leaderboard` on 2000-01-01 from 12 stored cells." in page
    assert "Devices: cpu (2 threads, x86\\_64), cuda (NVIDIA test card)" in page
    readme = first[Path("README.md")].decode()  # reproduction commands: shell-quoted, on presets written from the records
    run = f"benchbackcompat run --preset {tmp_path}/reproduce/embedded-quick.toml --scenario"
    assert (f"{run} ext-class --methods 'evil|<script>alert(1)</script>,fl$\\frac{{at,unstable' --seeds 0\n"
            f"{run} ext-class --methods independent,l2 --seeds 0,1\n"  # exactly the stored cells: no l2 at seed 2
            f"{run} multi-step --methods hoc --seeds 0,1\n"
            f"{run} multi-step --methods independent --seeds 0,1,2\n") in readme
    preset = first[Path("reproduce/embedded-quick.toml")].decode()
    assert '[methods."evil|<script>alert(1)</script>"]' in preset and 'metrics = ["cmc@1"]' in preset
    assert_pages_are_inert(tmp_path)
    write_leaderboard(merged, tmp_path, "benchbackcompat leaderboard --results r --out o", "2031-12-31")
    second = {p.relative_to(tmp_path): p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()}
    manifest = json.loads(second.pop(Path(".leaderboard-files.json")))  # the renderer's list of what it wrote
    assert second.keys() == first.keys() and {Path(name) for name in manifest["files"]} == set(first)
    for name, data in first.items():
        assert second[name] == data.replace(b"2000-01-01", b"2031-12-31"), name


def test_header_says_whether_cells_from_several_commits_ran_the_same_method_code(records):
    from benchbackcompat.report.provenance import header_markdown
    for i, r in enumerate(records):  # two commits; the method code (part of the cell key) the same per method
        r["versions"]["commit"] = ["aaaa", "bbbb"][i % 2]
        r["identity"] = {"code": {"source": r["method"]}}
    parsed = merge_records([("fixture", records)]).records
    assert "project commit: aaaa, bbbb (each method's code is the same in all its cells)" in header_markdown(parsed, "d")
    records[0]["identity"] = {"code": {"source": "edited"}}
    parsed = merge_records([("fixture", records)]).records
    assert f"(the code of {records[0]['method']} differs between its cells)" in header_markdown(parsed, "d")


def test_chance_floor_is_twice_chance_or_a_fifth_of_the_way_to_100_where_chance_is_high():
    from benchbackcompat.report.seed_statistics import chance_floor

    assert chance_floor(2.0) == 4.0 and chance_floor(10.0) == 20.0  # top-1 over 50 and 10 classes
    assert chance_floor(50.0) == 60.0  # pair verification: twice chance would be 100%, which no model reaches


LONG = "a-method-whose-name-takes-most-of-a-screen-" + "x" * 30  # 73 characters


def test_default_view_keeps_the_ranking_statistics_when_the_headline_is_wider_than_a_page(records):
    for record in records:
        if record["method"] == "l2":
            record["method"] = LONG
            record["label"] = record["label"].replace("/l2/", f"/{LONG}/")
    text = leaderboard_tables(records)
    rows = table_rows(text, "### ext-class")
    # rank, ranks, self, cross, P_up and P_com beside the long label make 192 characters a row; P_com and cross 153
    assert rows["method"] == ["method", "rank", "ranks", "cross (cmc@1)", "P_com (cmc@1)", "min", "seeds"]
    default = text.split("### ext-class", 1)[1].split("\n\n", 2)[1]
    assert max(len(line) for line in default.splitlines()) <= 160
    hidden = table_rows(text, "CMC@1 statistics:")  # the columns left out come next, in full
    assert hidden["method"] == ["method", "self (cmc@1)", "cross (cmc@1)", "P_up (cmc@1)", "P_com (cmc@1)", "seeds"]


def test_overview_splits_scenarios_into_tables_a_page_wide(records):
    from benchbackcompat.report.overview import overview_tables

    single = [r for r in records if r["kind"] == "ext-class"]
    copies = [{**r, "scenario": f"ext-class-{i}", "key": f"{r['key'][:-1]}{i}"} for i in range(6) for r in single]
    text = overview_tables(build_tables(merge_records([("fixture", copies)]).records))
    headers = [cells(line) for line in text.splitlines() if line.startswith("| method")]
    scenarios = [name for header in headers for name in header[1:]]
    assert scenarios == [f"ext-class-{i} (CMC@1)" for i in range(6)]  # each once, in order
    assert len(headers) > 1 and max(len(line) for line in text.splitlines() if line.startswith("|")) <= 160
