"""Readings generated from the data, checked by hand: the live-gallery statistics of a record (backfilling area, the
curve's lowest point against the old self-test, index gaps), the regression-during-refresh finding, the rank's
stability over seed and query resamples, bold as the rank-1 tier, and `compare`/`status` refusing unknown names."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from benchbackcompat.cli import main
from benchbackcompat import evaluations
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.ranking import best_ids
from benchbackcompat.report.table_data import Stat
from benchbackcompat.report.stability import range_text, rank_ranges
from benchbackcompat.report.upgrade import regression_finding
from benchbackcompat.store import ResultStore
from test_statistics import _single as _hand_made


def _single(*args, **kwargs) -> dict:
    """``test_statistics._single`` as a store holds it: a store key, and no AA/AC/ACA that its matrix does not give."""
    record = _hand_made(*args, **kwargs)
    record["key"] = record["key"].ljust(16, "0")
    for name in ("AA", "AC", "ACA"):
        record["metrics"]["cmc@1"].pop(name)
    return record

T2 = 4.302653  # t(0.975, 2 degrees of freedom)


def test_live_values_by_hand():
    matrix = [[75.0, None], [70.0, 82.0]]
    backfill = {"pairs": [{"old": 0, "new": 1, "fractions": [0.0, 0.5, 1.0],
                           "curves": {"cmc@1": {"random": [70.0, 60.0, 82.0]}}, "auc": {"cmc@1": {"random": 68.0}}}]}
    index = {"matrices": {"flat": {"cmc@1": [[74.0, None], [68.0, 82.0]]}}}
    found = evaluations.statistics(SimpleNamespace(backfill=backfill, index=index, matrices={"cmc@1": matrix}), "cmc@1")
    # lowest point 60 at 50% refreshed, 15 points below the old self-test 75; index: 70 - 68, ((75-74) + 0) / 2
    assert found == {"auc_random": 68.0, "dip_random": -15.0, "dip_at_random": 50.0, "gap_cross_flat": 2.0,
                     "gap_self_flat": 0.5}
    assert evaluations.statistics(SimpleNamespace(backfill=None, index=None, matrices={"cmc@1": matrix}), "cmc@1") == {}


def _curve_record(label: str, seed: int, dip: float) -> SimpleNamespace:
    pair = {"old": 0, "new": 1, "fractions": [0.0, 0.2, 1.0], "curves": {"cmc@1": {"random": [80.0, 70.0 + dip, 90.0]}},
            "auc": {"cmc@1": {"random": 80.0}}}
    return SimpleNamespace(seed=seed, backfill={"pairs": [pair]}, matrices={"cmc@1": [[70.0, None], [80.0, 90.0]]})


def test_regression_finding_by_hand():
    rows = [SimpleNamespace(label="a", finished=[_curve_record("a", s, d) for s, d in ((0, -10), (1, -12), (2, -14))]),
            SimpleNamespace(label="b", finished=[_curve_record("b", s, d) for s, d in ((0, 1), (1, 2), (2, 3), (3, -5))])]
    table = SimpleNamespace(rows=rows, title="t (backfill)")
    text = regression_finding(table, "cmc@1")
    # a: dips -10, -12, -14 at 20%: mean -12, sd 2, half-width T2 * 2 / sqrt(3) = 4.97; b on the common seeds 0-2
    # (its seed 3 left out): +1, +2, +3, never below
    half = T2 * 2 / np.sqrt(3)
    assert "from the table below (t (backfill), seeds 0-2, common to its rows)" in text
    assert (f"random order: significantly below the old self-test at the curve's lowest point: a -12.0 "
            f"[{-12 - half:+.1f}, {-12 + half:+.1f}] points at 20% refreshed (below in 3 of 3 seeds); never below it "
            "at any seed: b.") in text


def test_rank_ranges_and_bold_is_the_rank_one_tier():
    n = 400
    # p_com = (cross - 200) / 80 at every seed: a 0.625, b 0.5 (always below a), c 0.25; no overlap over seeds
    records = [_single(m, s, n, 200, 280, cross, 200, 280) for s in (0, 1, 2)
               for m, cross in (("a", 250), ("b", 240), ("c", 220))]
    [table] = build_tables(records)
    ranges = {row.label: range_text(found) for row in table.rows if (found := rank_ranges(table).get(id(row)))}
    assert set(ranges) == {"a", "b", "c"}
    assert ranges["c"].endswith("3") and ranges["a"].startswith("1")
    column = next(c for c in table.columns if c.statistic.key == "p_com")
    bold = {table.rows[i].label for i in best_ids(table, column)}
    assert bold == {row.label for row in table.rows if row.rank == 1}  # bold is exactly rank 1 on the ranked column


def test_rank_range_of_two_rows_that_swap_over_seeds():
    a = Stat((1.0, 3.0))
    b = Stat((2.0, 2.0))
    rows = [SimpleNamespace(label=label, rank=1, cells={"cmc@1:p_com": stat}) for label, stat in (("a", a), ("b", b))]
    column = SimpleNamespace(id="cmc@1:p_com", metric="cmc@1", statistic=SimpleNamespace(key="p_com", higher_is_better=True))
    table = SimpleNamespace(rows=rows, columns=[column], kind="ext-class")
    found = rank_ranges(table)
    # a's resampled mean is 1, 2 or 3 against b's 2: first or second, as resamples go
    assert found[id(rows[0])] == (1, 2) and range_text(found[id(rows[0])]) == "1–2"


@pytest.fixture
def folders(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        for record in (_single("hoc", 0, 400, 200, 280, 250, 200, 280), _single("l2", 0, 400, 200, 280, 240, 200, 280)):
            ResultStore(root).write_record(record["key"], record)
    return str(a), str(b)


@pytest.mark.parametrize("option,message", [
    (["--statistics", "bogus"], "unknown statistic (`--statistics`): 'bogus'."),
    (["--statistics", "p_comm"], "unknown statistic (`--statistics`): 'p_comm'. Did you mean 'p_com'?"),
    (["--methods", "hocc"], "'hocc'. Did you mean 'hoc'?"),
    (["--scenario", "ext-clas"], "'ext-clas'. Did you mean 'ext-class'?"),
])
def test_compare_refuses_unknown_names_in_one_line(folders, capsys, option, message):
    assert main(["compare", *folders, *option]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_status_refuses_an_unknown_scenario_and_lists_the_variant(folders, capsys):
    assert main(["status", "--results", folders[0], "--scenario", "ext-clas"]) == 2
    assert "Did you mean 'ext-class'?" in capsys.readouterr().err
    assert main(["status", "--results", folders[0]]) == 0
    assert "| variant " in capsys.readouterr().out


def test_compare_prints_no_interval_for_a_refused_number_and_no_warning(tmp_path, capsys, recwarn):
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):  # a 2-point update: P_com refused on both sides
        record = _single("hoc", 0, 400, 200, 208, 210, 200, 208)
        ResultStore(root).write_record(record["key"], record)
    assert main(["compare", str(a), str(b), "--statistics", "p_com,cross"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "| p_com " in x)
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[5] == cells[7] == "–" and cells[9] == cells[10] == "-"  # A, B refused; no difference, no interval
    assert "–: not shown, as on the leaderboard (ext-class/hoc cmc@1 p_com in A" in out
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_the_exports_carry_each_rows_rank_range_as_its_table_shows_it():
    """a (P_com 0.625 at every seed) is never below rank 1's tier start, c (0.25) always last: the CSV's rank_low and
    rank_high and the JSON's rank_range say so, and match the Markdown table's ``ranks`` column."""
    import csv
    import io
    import json

    from benchbackcompat.report.exports import csv_export, json_export
    from benchbackcompat.report.tables import Footnotes, table_markdown

    records = [_single(m, s, 400, 200, 280, cross, 200, 280) for s in (0, 1, 2)
               for m, cross in (("a", 250), ("b", 240), ("c", 220))]
    tables = build_tables(records)
    exported = {row["label"]: row["rank_range"] for row in json.loads(json_export(tables, {}))["tables"][0]["rows"]}
    in_csv = {r["method"]: (r["rank_low"], r["rank_high"]) for r in csv.DictReader(io.StringIO(csv_export(tables)))
              if r["statistic"] == "p_com"}
    assert exported["a"][0] == 1 and exported["c"] == [3, 3]
    assert all(in_csv[label] == tuple(str(v) for v in found) for label, found in exported.items())
    lines = [line for line in table_markdown(tables[0], Footnotes()).splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    shown = {cells[0]: cells[header.index("ranks")] for line in lines[1:]
             for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    assert all(shown[label] == (str(lo) if lo == hi else f"{lo}–{hi}") for label, (lo, hi) in exported.items())


def test_the_verdict_gives_the_winner_against_the_next_best_paired_by_seed():
    """a's P_com is (250 − 200) / 80 = 0.625 and b's (240 − 200) / 80 = 0.5 at every seed: the verdict names a as
    best with a − b = +0.125, its interval around it and above 0."""
    import re

    from benchbackcompat.report.overview import verdict

    records = [_single(m, s, 400, 200, 280, cross, 200, 280) for s in (0, 1, 2)
               for m, cross in (("a", 250), ("b", 240), ("c", 220))]
    text = verdict(build_tables(records))
    found = re.search(r"a is best on .*; a − b: ([+-][\d.]+) \[([+-][\d.]+), ([+-][\d.]+)\] paired by seed", text)
    assert found, text
    mean, low, high = map(float, found.groups())
    assert mean == 0.125 and 0 < low < mean < high
