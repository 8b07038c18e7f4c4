"""Flips of a team that never backfills (it keeps the first gallery): C[0][0] -> C[t][0] for every later model t, from
the per-query hits records already store. Checked on hit vectors worked out by hand and against a loop over the
queries (resampled replicates included), then through the tables, the method page, the frames and ``show``."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchbackcompat.metrics import flips, outcomes
from benchbackcompat.metrics.summary import summarise
from benchbackcompat.record import parse_record
from benchbackcompat.report.columns import FIRST_GALLERY, FLIPS
from benchbackcompat.report.exports import table_dicts
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.methods import Entry, method_markdown
from benchbackcompat.report.table_data import Stat
from benchbackcompat.report.tables import headline_columns, other_views
from benchbackcompat.results.flips import flip_frame, flip_lines
from benchbackcompat.results.frames import results_frame
from test_flips import loop_rates

# 3 models, 5 queries: HITS[t][k] = query model t's hits on gallery model k's features
HITS = {(0, 0): [1, 1, 0, 1, 0],
        (1, 0): [1, 0, 0, 1, 1], (1, 1): [1, 1, 1, 1, 0],
        (2, 0): [0, 1, 1, 0, 0], (2, 1): [1, 1, 0, 1, 0], (2, 2): [1, 1, 1, 1, 1]}
# first gallery, t = 1: C00 -> C10 breaks query 1 and fixes query 4 (20%, 20%); C00 -> C11 fixes query 2 (0%, 20%)
# t = 2: C00 -> C20 breaks queries 0 and 3 and fixes query 2 (40%, 20%); C00 -> C22 fixes queries 2 and 4 (0%, 40%)
FIRST = [(1, 0, 20.0, 20.0, 0.0, 20.0), (2, 0, 40.0, 20.0, 0.0, 40.0)]


def stored(hits: dict[tuple[int, int], list], T: int) -> dict:
    return {"C": [[outcomes.encode(np.asarray(hits[t, k], dtype=float)) if (t, k) in hits else None for k in range(T)]
                  for t in range(T)]}


def sequence_record(method: str = "m", seed: int = 0, hits: dict = HITS, T: int = 3) -> dict:
    C = [[100.0 * float(np.mean(hits[t, k])) if k <= t else None for k in range(T)] for t in range(T)]
    return {"status": "finished", "key": f"{method}{seed}", "label": f"multi-step/{method}/seed{seed}",
            "scenario": "multi-step", "kind": "multi-step", "dataset": "d", "preset": "p", "method": method,
            "params": {}, "seed": seed, "config": {"metrics": ["cmc@1"]}, "metrics": {"cmc@1": summarise(C)},
            "matrices": {"cmc@1": C}, "outcomes": {"cmc@1": stored(hits, T)}}


def test_hand_computed_first_gallery_flips():
    rows = flips.pair_rates(stored(HITS, 3), first=True)
    assert [(r["query_model"], r["gallery_model"], r["nfr_cross"], r["pfr_cross"], r["nfr_self"], r["pfr_self"])
            for r in rows] == [pytest.approx(row) for row in FIRST]
    summary = flips.summary(stored(HITS, 3))
    assert (summary["nfr_first"], summary["pfr_first"]) == pytest.approx((40.0, 20.0))  # the last model, t = 2
    # the consecutive pairs are unchanged: (1, 0) as above, (2, 1) C11 -> C21 breaks query 2 (20%, 0%)
    assert (summary["nfr_cross"], summary["pfr_cross"]) == pytest.approx(((20 + 20) / 2, (20 + 0) / 2))
    # replicate 0 keeps every query once, replicate 1 is query 0 five times (broken on the first gallery), 2 query 2
    weights = np.array([[1, 1, 1, 1, 1], [5, 0, 0, 0, 0], [0, 0, 5, 0, 0]])
    replicates = flips.resampled(stored(HITS, 3), weights)
    assert replicates["nfr_first"].tolist() == pytest.approx([40.0, 100.0, 0.0])
    assert replicates["pfr_first"].tolist() == pytest.approx([20.0, 0.0, 100.0])


def test_one_update_has_no_first_gallery_rates():
    two = {key: value for key, value in HITS.items() if key[0] < 2}
    assert set(flips.summary(stored(two, 2))) == set(flips.KEYS)
    assert set(flips.resampled(stored(two, 2), np.ones((2, 5), dtype=int))) == set(flips.KEYS)


def test_first_gallery_rates_match_a_loop_over_the_queries():
    rng = np.random.default_rng(7)
    for trial in range(12):
        T, n = int(rng.integers(3, 7)), 150
        hits = {(t, k): (rng.random(n) < rng.uniform(0.3, 0.8)).astype(float) for t in range(T) for k in range(t + 1)}
        if trial % 2:  # the first gallery model has not seen some classes: its entries skip those queries
            unseen = rng.random(n) < 0.3
            for t in range(T):
                hits[t, 0] = np.where(unseen, np.nan, hits[t, 0])
        found = stored(hits, T)
        rows = flips.pair_rates(found, first=True)
        assert [(r["query_model"], r["gallery_model"]) for r in rows] == [(t, 0) for t in range(1, T)]
        for row in rows:
            t = row["query_model"]
            assert (row["nfr_cross"], row["pfr_cross"]) == pytest.approx(loop_rates(hits[0, 0], hits[t, 0]))
            assert (row["nfr_self"], row["pfr_self"]) == pytest.approx(loop_rates(hits[0, 0], hits[t, t]))
        summary = flips.summary(found)
        assert (summary["nfr_first"], summary["pfr_first"]) == pytest.approx(loop_rates(hits[0, 0], hits[T - 1, 0]))
        weights = rng.integers(0, 3, size=(4, n))
        replicates = flips.resampled(found, weights)
        for i, w in enumerate(weights):  # a replicate is the loop over the queries repeated by their weights
            expected = loop_rates(np.repeat(hits[0, 0], w), np.repeat(hits[T - 1, 0], w))
            assert (replicates["nfr_first"][i], replicates["pfr_first"][i]) == pytest.approx(expected)


def test_tables_method_page_frames_and_show_carry_them():
    records = [parse_record(sequence_record())]
    [table] = build_tables(records)
    row = table.rows[0]
    cell = row.cells["cmc@1:nfr_first"]
    assert isinstance(cell, Stat) and cell.mean == pytest.approx(40.0)
    low, high = cell.interval
    assert 0.0 <= low <= 40.0 <= high <= 100.0
    assert row.cells["cmc@1:pfr_first"].mean == pytest.approx(20.0)
    assert not any(c.statistic.key in flips.FIRST_KEYS for c in headline_columns(table))
    views = dict(other_views(table, headline_columns(table)))
    assert [c.statistic.key for c in views[FLIPS]] == list(flips.KEYS)
    assert [c.statistic.key for c in views[FIRST_GALLERY]] == list(flips.FIRST_KEYS)
    exported = table_dicts([table])[0]["rows"][0]["cells"]["cmc@1:nfr_first"]
    assert exported["mean"] == pytest.approx(40.0)

    page = method_markdown("m", [Entry("page", table, row)], None, Path("."), "2000-01-01")
    never = page.split("A team that never backfills", 1)[1].split("## ", 1)[0]
    cells = [line.split("|")[1:-1] for line in never.splitlines() if line.startswith("| multi-step")]
    assert [[c.strip().split(" [")[0] for c in line] for line in cells] == [["multi-step", "3", "40.00", "20.00"]]

    frame = flip_frame(records)
    first = frame[frame.pairs == "first gallery"]
    assert first[["query_model", "gallery_model", "nfr_cross", "pfr_cross"]].values.tolist() == [
        pytest.approx([t, k, nfr, pfr]) for t, k, nfr, pfr, _, _ in FIRST]
    assert (frame.pairs == "consecutive").sum() == 2
    values = results_frame(records).set_index("statistic").value
    assert (values["nfr_first"], values["pfr_first"]) == pytest.approx((40.0, 20.0))
    assert "t = 2 NFR 40.00, PFR 20.00" in flip_lines(records[0], "cmc@1")[-1]


def test_one_update_pages_show_no_first_gallery_view():
    one = sequence_record(T=2, hits={key: value for key, value in HITS.items() if key[0] < 2})
    one.update(scenario="ext-class", kind="ext-class", label="ext-class/m/seed0")
    one["metrics"]["cmc@1"] = {"self": 80.0, "cross": 60.0, "old_self": 60.0}
    [table] = build_tables([one])
    assert not any(c.statistic.key in flips.FIRST_KEYS for c in table.columns)
    page = method_markdown("m", [Entry("page", table, table.rows[0])], None, Path("."), "d")
    assert "never backfills" not in page
    assert set(flip_frame([parse_record(one)]).pairs) == {"consecutive"}
