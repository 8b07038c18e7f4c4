"""A result's identity is its variant: two configurations of one (scenario, method, seed) are never pooled by
any reader (DataFrame, export, compare, leaderboard CSV and page), and a table ranks only what its primary
statistic decides. Records are hand-written; expected means are computed by hand in the comments."""
from __future__ import annotations

import copy
import csv
import io

import pandas as pd
import pytest

import benchbackcompat
from benchbackcompat.results.compare import compare_results, render
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.exports import csv_export
from benchbackcompat.report.tables import Footnotes, table_markdown
from benchbackcompat.store import ResultStore


def cell(seed: int, ac: float, steps: int = 4000, lam: float = 0.1) -> dict:
    """A cl2r-like hoc cell of T = 5 models with AC ``ac``: every self-test 50, the first 10 * ac of the 10 pairs
    (row by row) cross-tested at 55 (compatible), the others at 45; AA and ACA worked out from that matrix.
    ``steps`` and ``lam`` set its configuration."""
    compatible = round(10 * ac)
    C = [[50.0 if k == t else None for k in range(5)] for t in range(5)]
    pairs = [(t, k) for t in range(5) for k in range(t)]
    for i, (t, k) in enumerate(pairs):
        C[t][k] = 55.0 if i < compatible else 45.0
    aa = (5 * 50 + 55 * compatible + 45 * (10 - compatible)) / 15
    return {"key": f"hoc{seed}-{steps}-{lam}".ljust(16, "0"), "label": f"cl2r/hoc/seed{seed}", "scenario": "cl2r",
            "kind": "cl2r", "preset": "cpu", "method": "hoc", "params": {"lam": lam}, "seed": seed,
            "dataset": "embedded", "config": {"kind": "cl2r", "train": {"min_steps": steps}, "metrics": ["top1"]},
            "status": "finished", "matrices": {"top1": C},
            "metrics": {"top1": {"AC": compatible / 10, "AA": aa, "ACA": 55 * compatible / 10}}}


# lam 0.1: AC 0.6, 0.5 over seeds 0, 1 (mean 0.55); lam 1.0: AC 0.0, 0.1 (mean 0.05); pooled they would read 0.3.
# 12,000 steps (lam 0.1): AC 0.9 at seed 0 only.
RECORDS = [cell(0, 0.6), cell(1, 0.5), cell(0, 0.0, lam=1.0), cell(1, 0.1, lam=1.0), cell(0, 0.9, steps=12000)]


def store(path, records) -> str:
    for r in records:
        ResultStore(path).write_record(r["key"], copy.deepcopy(r))
    return str(path)


def means(frame: pd.DataFrame, by: list[str]) -> dict[tuple, float]:
    ac = frame[frame["statistic"] == "AC"]
    return {k: round(v, 6) for k, v in ac.groupby(by)["value"].mean().items()}


def test_two_configurations_of_one_cell_are_never_pooled_by_any_reader(tmp_path):
    root = store(tmp_path / "r", RECORDS)
    expected = {("train.min_steps=12000", "hoc"): 0.9, ("train.min_steps=4000; lam=0.1", "hoc"): 0.55,
                ("train.min_steps=4000; lam=1.0", "hoc"): 0.05}

    frame = benchbackcompat.load_results(root)
    assert means(frame, ["variant", "method"]) == expected
    assert frame.groupby(["config_hash", "seed", "metric", "statistic"]).size().max() == 1  # one value per seed
    assert frame.groupby("variant")["config_hash"].nunique().max() == 1  # a variant is one configuration
    entries = benchbackcompat.load_matrix_entries(root)
    assert entries.groupby(["variant", "seed", "query_model", "gallery_model"]).size().max() == 1

    benchbackcompat.export_results(root, tmp_path / "out.csv")
    assert means(pd.read_csv(tmp_path / "out.csv", keep_default_na=False), ["variant", "method"]) == expected

    table, notes = compare_results(root, root, ("AC",))
    rows = {r["variant"]: (r["A"], r["seeds A"], r["B"], r["config A"]) for r in table.to_dict("records")}
    assert rows["train.min_steps=4000; lam=0.1"][:3] == (pytest.approx(0.55), "0,1", pytest.approx(0.55))
    assert rows["train.min_steps=4000; lam=1.0"][0] == pytest.approx(0.05)
    assert rows["train.min_steps=12000"][:2] == (pytest.approx(0.9), "0")
    assert len({r[3] for r in rows.values()}) == 3  # three configuration hashes
    assert notes == []  # each cell is matched with its own configuration on the other side, not "one of them"
    assert "0,0,1,1" not in render(table, notes, "a", "b")

    tables = build_tables(RECORDS)
    lines = list(csv.DictReader(io.StringIO(csv_export(tables))))
    shown = {(r["variant"], r["method"]): float(r["mean"]) for r in lines if r["statistic"] == "AC"}
    assert shown == {("train.min_steps=12000", "hoc"): 0.9, ("train.min_steps=4000", "hoc (lam=0.1)"): 0.55,
                     ("train.min_steps=4000", "hoc (lam=1.0)"): 0.05}
    assert len({r["config_hash"] for r in lines}) == 3
    page = "\n".join(table_markdown(t, Footnotes()) for t in tables)
    assert "0.550" in page and "0.050" in page and "0.300" not in page


def test_compare_pairs_the_configurations_of_each_side_and_names_what_differs(tmp_path):
    a = store(tmp_path / "a", [cell(0, 0.6), cell(1, 0.5)])
    b = store(tmp_path / "b", [cell(0, 0.7, steps=12000), cell(1, 0.8, steps=12000)])
    table, notes = compare_results(a, b, ("AC",))
    [row] = table.to_dict("records")  # one configuration per side: A's and B's are paired, their hashes differ
    assert (row["variant"], row["A"], row["B"], row["B - A"]) == ("", pytest.approx(0.55), pytest.approx(0.75),
                                                                  pytest.approx(0.2))
    assert row["config A"] != row["config B"]
    assert notes == [f"cl2r/hoc/seed{s}: configuration differs: train.min_steps 4000 -> 12000" for s in (0, 1)]


def single(method: str, old: float, new: float, cross: float, reference: float) -> dict:
    """One update with a reference model: P_com = (cross - old) / (reference - old), stored as computed."""
    return {"status": "finished", "key": f"{method}".ljust(16, "0"), "label": f"ext-class/{method}/seed0",
            "scenario": "ext-class", "kind": "ext-class", "dataset": "d", "preset": "p", "method": method,
            "params": {}, "seed": 0, "config": {"metrics": ["cmc@1"]}, "chance": {"cmc@1": 5.0},
            "matrices": {"cmc@1": [[old, None], [cross, new]]},
            "metrics": {"cmc@1": {"self": new, "cross": cross, "old_self": old, "reference_self": reference,
                                  "p_com": (cross - old) / (reference - old)}}}


def test_nothing_is_ranked_when_no_row_has_a_decidable_p_com():
    # a 2-point update (reference 52 vs old 50) is below the minimum: P_com is undecidable for every row. The
    # cross-test alone would rank independent (cross 5.2, just above the 5% chance level, far below its old
    # self-test of 50) above l2 (cross 4.9); no fallback ranks compatibility, so nothing is ranked.
    records = [single("independent", 50.0, 52.0, 5.2, 52.0), single("l2", 50.0, 51.0, 4.9, 52.0)]
    [table] = build_tables(records)
    assert [row.rank for row in table.rows] == [None, None]
    assert table.unranked.startswith("Not ranked: no row has a decidable P_com")
    text = table_markdown(table, Footnotes())
    assert text.startswith(table.unranked) and "| independent " in text
    # once one row has a decidable P_com (a 30-point update), only that row is ranked
    [table] = build_tables([*records, single("hbct", 40.0, 70.0, 55.0, 70.0)])
    assert {row.method: row.rank for row in table.rows} == {"hbct": 1, "independent": None, "l2": None}
    assert table.unranked == ""


def test_seeds_computed_on_different_data_are_kept_apart_with_a_warning(tmp_path, caplog):
    # one configuration whose seeds each draw their own class order, seed 0 rendered from data root A and seed 1 from
    # B (same layout, other pixels): their data fingerprints differ as any two seeds' do, but the datasets' (before the
    # seed orders them) differ too. AC 0.6 and 0.0 would pool into one row of mean 0.3 over "2 seeds"; kept apart
    a, b = cell(0, 0.6), cell(1, 0.0)
    a["data_source"], b["data_source"] = "a" * 64, "b" * 64
    a["identity"], b["identity"] = {"data_sha256": "c" * 64}, {"data_sha256": "d" * 64}
    for record, order in ((a, 11), (b, 12)):
        record["config"] = {**record["config"], "data": {"order_by_seed": True, "class_order_seed": order}}
    with caplog.at_level("WARNING", logger="benchbackcompat"):
        tables = build_tables([a, b])
    assert sorted(t.variant for t in tables) == ["data aaaaaaaa", "data bbbbbbbb"]
    assert [len(t.rows[0].records) for t in tables] == [1, 1]
    assert "cl2r (cpu, embedded): its records were computed on different data (fingerprints aaaaaaaa, " \
        "bbbbbbbb); kept apart" in caplog.text
    frame = benchbackcompat.load_results(store(tmp_path / "r", [a, b]))
    assert means(frame, ["variant"]) == {"data aaaaaaaa": 0.6, "data bbbbbbbb": 0.0}
    # the page says why the configuration stands in two tables
    from benchbackcompat.cli import main
    assert main(["leaderboard", "--results", str(tmp_path / "r"), "--out", str(tmp_path / "board")]) == 0
    page = next(p for p in (tmp_path / "board").glob("*.md") if p.name != "README.md").read_text()
    assert page.count("Data: records of the dataset whose fingerprint begins aaaaaaaa. This configuration's "
                      "records were computed on different data") == 1
    assert "Data: records of the dataset whose fingerprint begins bbbbbbbb." in page


def test_one_dataset_records_one_data_source_for_every_seed(tmp_path):
    frame = benchbackcompat.run(["ext-class"], ["independent"], seeds="0-1", smoke=True, out=tmp_path,
                                overrides={"data.order_by_seed": True})
    records = list(ResultStore(tmp_path).records())
    assert len(records) == 2 and len({r.identity["data_sha256"] for r in records}) == 2  # each seed orders the classes
    assert len({r.data_source for r in records}) == 1 and len(records[0].data_source) == 64
    assert set(frame["variant"]) == {""}  # one table: the seeds pool


def test_a_rows_qualifier_is_what_tells_it_from_the_methods_other_rows():
    tables = build_tables([cell(0, 0.5, lam=0.1), cell(0, 0.5, lam=0.2)])
    assert [(row.label, row.qualifier) for table in tables for row in table.rows] == [
        ("hoc (lam=0.1)", "lam=0.1"), ("hoc (lam=0.2)", "lam=0.2")]
    [table] = build_tables([cell(0, 0.5)])
    assert [(row.label, row.qualifier) for row in table.rows] == [("hoc", "")]
