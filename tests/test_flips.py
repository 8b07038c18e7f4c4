"""Negative and positive flip rates, checked against a loop over the queries and hand-computed cases: the metric, its
bootstrap replicates, the leaderboard cells and their bounded intervals, the frames and the flipped queries."""
from __future__ import annotations

import numpy as np
import pytest

from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import bootstrap, flips, outcomes
from benchbackcompat.record import parse_record
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.table_data import Missing, Stat
from benchbackcompat.report.columns import STATISTICS
from benchbackcompat.results.flips import flip_frame, flip_lines, flipped_queries
from benchbackcompat.results.frames import results_frame


def loop_rates(before: np.ndarray, after: np.ndarray) -> tuple[float, float]:
    """NFR and PFR (%) by counting query by query, over the queries both count."""
    negative = positive = counted = 0
    for b, a in zip(before, after):
        if np.isnan(b) or np.isnan(a):
            continue
        counted += 1
        negative += b == 1 and a == 0
        positive += b == 0 and a == 1
    return 100.0 * negative / counted, 100.0 * positive / counted


def test_hand_computed_case():
    before = np.array([1, 1, 0, 0, 1], dtype=float)
    after = np.array([1, 0, 1, 0, 0], dtype=float)
    assert flips.rates(before, after) == pytest.approx((40.0, 20.0))  # queries 1 and 4 broken, query 2 fixed


def test_rates_match_a_loop_over_queries_and_the_score_difference():
    rng = np.random.default_rng(0)
    for _ in range(20):
        before, after = (rng.random(300) < 0.6).astype(float), (rng.random(300) < 0.7).astype(float)
        nfr, pfr = flips.rates(before, after)
        assert (nfr, pfr) == pytest.approx(loop_rates(before, after))
        assert outcomes.score(after) - outcomes.score(before) == pytest.approx(pfr - nfr)


def test_queries_one_entry_skips_are_left_out():
    # the old gallery model has not seen the classes of the last two queries: both entries skip them
    before = np.array([1, 0, 1, np.nan, np.nan])
    after = np.array([0, 0, 1, np.nan, np.nan])
    assert flips.rates(before, after) == pytest.approx((100 / 3, 0.0))
    rng = np.random.default_rng(1)
    before = np.where(rng.random(200) < 0.3, np.nan, (rng.random(200) < 0.5).astype(float))
    after = (rng.random(200) < 0.5).astype(float)
    assert flips.rates(before, after) == pytest.approx(loop_rates(before, after))


def test_different_query_sets_and_average_precisions_are_refused():
    with pytest.raises(BenchError, match="same queries"):
        flips.rates(np.ones(4), np.ones(5))
    with pytest.raises(BenchError, match="hit outcomes"):
        flips.rates(np.array([0.5, 1.0]), np.array([1.0, 0.0]))
    assert not flips.defined_for("map") and flips.defined_for("cmc@1") and flips.defined_for("top1")


def _entries(matrix: list[list[np.ndarray | None]]) -> dict:
    return {"C": [[None if v is None else outcomes.encode(v.astype(bool)) for v in row] for row in matrix]}


def test_a_sequence_reports_its_consecutive_pairs_and_their_mean():
    rng = np.random.default_rng(2)
    hits = {(t, k): rng.random(100) < 0.5 for t in range(3) for k in range(t + 1)}
    stored = _entries([[hits.get((t, k)) for k in range(3)] for t in range(3)])
    rows = flips.pair_rates(stored)
    assert [(r["query_model"], r["gallery_model"]) for r in rows] == [(1, 0), (2, 1)]
    for row in rows:
        t, k = row["query_model"], row["gallery_model"]
        old = hits[k, k].astype(float)
        assert (row["nfr_cross"], row["pfr_cross"]) == pytest.approx(loop_rates(old, hits[t, k].astype(float)))
        assert (row["nfr_self"], row["pfr_self"]) == pytest.approx(loop_rates(old, hits[t, t].astype(float)))
    summary = flips.summary(stored)
    assert summary["nfr_cross"] == pytest.approx((rows[0]["nfr_cross"] + rows[1]["nfr_cross"]) / 2)


def test_replicates_resample_the_queries():
    before = np.array([1, 1, 0, 0], dtype=bool)
    cross = np.array([0, 1, 1, 0], dtype=bool)
    stored = _entries([[before, None], [cross, cross]])
    # replicate 0 keeps every query once, replicate 1 takes query 0 four times (a broken one), replicate 2 query 2
    weights = np.array([[1, 1, 1, 1], [4, 0, 0, 0], [0, 0, 4, 0]])
    values = flips.resampled(stored, weights)
    assert values["nfr_cross"].tolist() == pytest.approx([25.0, 100.0, 0.0])
    assert values["pfr_cross"].tolist() == pytest.approx([25.0, 0.0, 100.0])


def _record(method: str, seed: int, old: np.ndarray, cross: np.ndarray, new: np.ndarray, aps: bool = True) -> dict:
    pct = lambda v: 100.0 * float(np.mean(v))  # noqa: E731
    metrics = {"cmc@1": {"self": pct(new), "cross": pct(cross), "old_self": pct(old)}}
    matrices = {"cmc@1": [[pct(old), None], [pct(cross), pct(new)]]}
    stored = {"cmc@1": _entries([[old, None], [cross, new]])}
    if aps:
        metrics["map"] = dict(metrics["cmc@1"])
        matrices["map"] = matrices["cmc@1"]
        stored["map"] = {"C": [[outcomes.encode(old.astype(float)), None],
                               [outcomes.encode(cross.astype(float)), outcomes.encode(new.astype(float))]]}
    return {"status": "finished", "key": f"{method}{seed}", "label": f"ext-class/{method}/seed{seed}",
            "scenario": "ext-class", "kind": "ext-class", "dataset": "d", "preset": "p", "method": method, "params": {},
            "seed": seed, "config": {"metrics": list(metrics)}, "metrics": metrics, "matrices": matrices,
            "outcomes": stored}


def _outcomes(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random(n) < 0.5, rng.random(n) < 0.55, rng.random(n) < 0.7


def test_leaderboard_cells_are_the_mean_over_seeds_of_the_loop():
    records = [_record("m", seed, *_outcomes(seed)) for seed in range(3)]
    table = build_tables(records)[0]
    row = table.rows[0]
    expected = [loop_rates(o.astype(float), c.astype(float)) for o, c, _ in map(_outcomes, range(3))]
    cell = row.cells["cmc@1:nfr_cross"]
    assert isinstance(cell, Stat) and cell.mean == pytest.approx(np.mean([e[0] for e in expected]))
    assert row.cells["cmc@1:pfr_cross"].mean == pytest.approx(np.mean([e[1] for e in expected]))
    low, high = cell.interval
    assert 0.0 <= low < cell.mean < high <= 100.0
    flip_columns = [c for c in table.columns if c.statistic.key in flips.KEYS]
    assert {c.metric for c in flip_columns} == {"cmc@1"}  # no flip columns for mAP


def test_records_without_outcomes_show_no_flips():
    data = _record("m", 0, *_outcomes(0), aps=False)
    data.pop("outcomes")
    cell = build_tables([data])[0].rows[0].cells["cmc@1:nfr_cross"]
    assert isinstance(cell, Missing) and "per-query outcomes" in cell.reason


def test_intervals_of_rates_stay_inside_their_bounds():
    # three seeds near 0%: the t-interval of their values reaches below 0 and is kept inside [0, 100]
    sample = bootstrap.over_seeds([0.0, 0.1, 2.0], [np.zeros(50), np.full(50, 0.1), np.full(50, 2.0)], [0, 1, 2])
    assert bootstrap.interval(sample)[0] < 0.0
    for key in flips.KEYS:
        low, high = Stat((0.0, 0.1, 2.0), sample, STATISTICS[key].bounds).interval
        assert low == 0.0 and high == pytest.approx(bootstrap.interval(sample)[1])


def test_frames_and_show_carry_the_flips():
    old, cross, new = _outcomes(4)
    record = parse_record(_record("m", 0, old, cross, new))
    frame = results_frame([record])
    rates = frame[(frame.metric == "cmc@1") & frame.statistic.isin(flips.KEYS)].set_index("statistic").value
    nfr, pfr = loop_rates(old.astype(float), cross.astype(float))
    assert rates["nfr_cross"] == pytest.approx(nfr) and rates["pfr_cross"] == pytest.approx(pfr)
    assert rates["nfr_self"] == pytest.approx(loop_rates(old.astype(float), new.astype(float))[0])
    assert not frame[(frame.metric == "map") & frame.statistic.isin(flips.KEYS)].size
    pairs = flip_frame([record])
    assert pairs[["query_model", "gallery_model", "queries"]].values.tolist() == [[1, 0, len(old)]]
    assert pairs.nfr_cross.iloc[0] == pytest.approx(nfr)
    assert f"NFR {nfr:.2f}, PFR {pfr:.2f}" in flip_lines(record, "cmc@1")[0]
    assert flip_lines(record, "map") == []


def test_flipped_queries_are_those_a_loop_finds():
    old, cross, new = _outcomes(5)
    record = parse_record(_record("m", 0, old, cross, new))
    broken, fixed = flipped_queries(record, "cmc@1")
    assert broken.tolist() == [i for i in range(len(old)) if old[i] and not cross[i]]
    assert fixed.tolist() == [i for i in range(len(old)) if not old[i] and cross[i]]
    broken, _ = flipped_queries(record, "cmc@1", after="self")
    assert broken.tolist() == [i for i in range(len(old)) if old[i] and not new[i]]
    with pytest.raises(BenchError, match="no per-query"):
        flipped_queries(record, "cmc@1", query_model=2)


def test_flip_columns_are_a_view_of_their_own_not_the_headline():
    from benchbackcompat.report.columns import FLIPS
    from benchbackcompat.report.tables import headline_columns, other_views

    table = build_tables([_record("m", 0, *_outcomes(0))])[0]
    assert not any(c.statistic.key in flips.KEYS for c in headline_columns(table))
    title, columns = other_views(table, headline_columns(table))[-1]
    assert title == FLIPS and [c.id for c in columns] == [f"cmc@1:{key}" for key in flips.KEYS]
