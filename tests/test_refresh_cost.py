"""The cost of a refresh: what a cell times while it evaluates (images embedded per backbone, index builds per kind)
and the pages' table and figure read from it, checked against numbers worked out by hand; records without the
timings get no cost section."""
from __future__ import annotations

import pytest

from benchbackcompat.engine.timing import Throughput
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.refresh import (refresh_cost, refresh_figure, refresh_markdown, refresh_rows,
                                           refresh_sections)

C = [[50.0, None, None], [40.0, 60.0, None], [45.0, 55.0, 70.0]]


def record(seed: int, timings: dict | None, auc: tuple[float, float] | None = None) -> dict:
    data = {"status": "finished", "key": f"m{seed}", "label": f"multi-step/m/seed{seed}", "scenario": "multi-step",
            "kind": "multi-step", "dataset": "d", "preset": "p", "method": "m", "params": {}, "seed": seed,
            "config": {"metrics": ["cmc@1"]}, "metrics": {"cmc@1": {"AA": 50.0, "AC": 0.5}},
            "matrices": {"cmc@1": C}, "steps": [{"index": i, "backbone": "convnet-s"} for i in range(3)],
            "timings": {"train_s": 60.0, "eval_s": 6.0, **(timings or {})}}
    if auc is not None:  # one area per consecutive update: 0 -> 1 and 1 -> 2
        data["backfill"] = {"pairs": [{"old": k, "new": k + 1, "fractions": [0.0, 1.0],
                                       "curves": {"cmc@1": {"random": [C[k + 1][k], C[k + 1][k + 1]]}},
                                       "auc": {"cmc@1": {"random": area}}} for k, area in enumerate(auc)]}
    return data


TIMED = [  # seed 0: 1,000 images in 2 s, seed 1: 3,000 in 2 s; flat index: 600 items in 0.3 s, 400 in 0.2 s
    {"embed": {"convnet-s": {"items": 1000, "seconds": 2.0, "precision": "fp32"}},
     "reindex": {"flat": {"items": 600, "seconds": 0.3, "queries": 600}}},
    {"embed": {"convnet-s": {"items": 3000, "seconds": 2.0, "precision": "fp32"}},
     "reindex": {"flat": {"items": 400, "seconds": 0.2, "queries": 400}}},
]


def test_throughput_sums_items_and_seconds_per_key():
    found = Throughput()
    found.add("a", 10, 2.0)
    found.add("a", 30, 1.0, queries=5)
    found.add("b", 7, 0.5)
    assert found.to_dict() == {"a": {"items": 40, "seconds": 3.0, "queries": 5}, "b": {"items": 7, "seconds": 0.5}}


def test_refresh_cost_by_hand():
    [table] = build_tables([record(0, TIMED[0], (40.0, 60.0)), record(1, TIMED[1], (45.0, 55.0))])
    cost = refresh_cost(table.rows[0])
    # 4,000 images in 4 s pooled: 1,000 images/s; 10 M items: 1e7 / 1000 / 3600 = 2.7778 h
    assert cost.images_per_second == pytest.approx(1000.0) and cost.embed_hours() == pytest.approx(2.7778, abs=1e-4)
    # flat: 0.5 s for 1,000 items, 5e-4 s an item; 10 M items: 1e7 x 5e-4 / 3600 = 1.3889 h
    assert cost.reindex == {"flat": pytest.approx(5e-4)} and cost.reindex_hours("flat") == pytest.approx(1.3889, abs=1e-4)
    text = refresh_markdown(table, "cmc@1")
    [line] = [line for line in text.splitlines() if line.startswith("| m ")]
    # AUC: mean over updates and seeds (40 + 60 + 45 + 55) / 4 = 50; per hour of re-embedding 50 / 2.7778 = 18.0
    assert [cell.strip() for cell in line.split("|")[1:-1]] == [
        "m", "convnet-s, fp32", "1,000", "0.500", "2.78", "4.17", "18.0 (random)"]
    assert "1e7" not in text and "10,000,000 / images/s / 3600" in text


def test_records_without_the_timings_have_no_cost(tmp_path):
    [table] = build_tables([record(0, None, (40.0, 60.0))])
    assert refresh_cost(table.rows[0]) is None and refresh_markdown(table, "cmc@1") == ""
    assert refresh_sections(table, "page", tmp_path) == [] and not (tmp_path / "figures").exists()


def test_without_curves_or_index_the_table_has_only_the_embedding(tmp_path):
    [table] = build_tables([record(0, {"embed": TIMED[0]["embed"]})])
    [line] = [line for line in refresh_markdown(table, "cmc@1").splitlines() if line.startswith("| m ")]
    assert [cell.strip() for cell in line.split("|")[1:-1]] == ["m", "convnet-s, fp32", "500", "5.56"]
    path = refresh_figure(table, "cmc@1", tmp_path / "refresh.png")
    assert path.stat().st_size > 0
    parts = refresh_sections(table, "page", tmp_path)
    assert len(parts) == 2 and parts[1].endswith("-refresh.png)")
    assert (tmp_path / parts[1].split("](", 1)[1][:-1]).stat().st_size > 0


def test_the_embedding_throughput_is_the_backbones_pooled_over_the_table():
    # method m embedded 1,000 images in 2 s, method n 3,000 in 2 s, both convnet-s in fp32: 4,000 / 4 s for both rows
    slower = {**TIMED[1], "reindex": {"flat": {"items": 400, "seconds": 0.4, "queries": 400}}}
    other = {**record(0, slower), "method": "n", "key": "n0", "label": "multi-step/n/seed0"}
    [table] = build_tables([record(0, TIMED[0]), other])
    rates = {row.method: cost.images_per_second for row, cost in refresh_rows(table)}
    assert rates == {"m": pytest.approx(1000.0), "n": pytest.approx(1000.0)}
    # the index seconds stay each row's own (not 0.7 s / 1,000 items): 0.3 s / 600 items and 0.4 s / 400 items
    assert {row.method: cost.reindex["flat"] for row, cost in refresh_rows(table)} == {
        "m": pytest.approx(5e-4), "n": pytest.approx(1e-3)}
    assert refresh_cost(table.rows[0]).images_per_second in (pytest.approx(500.0), pytest.approx(1500.0))
