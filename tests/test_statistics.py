"""Per-query outcomes, bootstrap intervals, significance, P_com decidability, chance flags and ranking,
checked against hand-computed values, brute-force enumeration and the normal approximation."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from benchbackcompat.metrics import bootstrap, outcomes, retrieval
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.seed_statistics import MIN_UPDATE_GAIN, undecidable_update
from benchbackcompat.report.table_data import Stat


def test_outcomes_round_trip_hits_and_average_precisions():
    hits = np.array([True, False, True, True, False, False, True, False, True, True])
    stored = outcomes.encode(hits)
    assert stored["encoding"] == "bits" and len(stored["data"]) <= 4  # 10 hits -> 2 bytes -> 4 base64 chars
    assert outcomes.decode(stored).tolist() == hits.astype(float).tolist()
    aps = np.array([0.5, np.nan, 1.0, 0.25])
    back = outcomes.decode(outcomes.encode(aps))
    assert np.isnan(back[1]) and back[[0, 2, 3]].tolist() == [0.5, 1.0, 0.25]
    assert outcomes.score(aps) == pytest.approx(100 * (0.5 + 1.0 + 0.25) / 3)


def test_per_query_ranks_match_a_brute_force_ranking():
    gen = torch.Generator().manual_seed(0)
    q, g = torch.randn(30, 4, generator=gen), torch.randn(40, 4, generator=gen)
    ql, gl = torch.randint(0, 5, (30,), generator=gen), torch.randint(0, 5, (40,), generator=gen)
    ranks = retrieval.first_relevant_ranks(q, ql, g, gl, chunk_size=7)
    sims = torch.nn.functional.normalize(q, dim=1) @ torch.nn.functional.normalize(g, dim=1).T
    for i in range(30):
        order = sorted(range(40), key=lambda j: (-float(sims[i, j]), j))
        expected = next((r for r, j in enumerate(order) if gl[j] == ql[i]), 40)
        assert int(ranks[i]) == expected
    assert retrieval.cmc(q, ql, g, gl, ks=(1,))[1] == pytest.approx(100 * float((ranks < 1).float().mean()))


def test_resampled_scores_by_hand():
    o = np.array([[1.0, 0.0, 1.0], [0.5, np.nan, 0.0]])
    w = np.array([[2, 0, 1], [0, 3, 0], [1, 1, 1]])
    s = bootstrap.resampled_scores(o, w)
    assert s[0].tolist() == pytest.approx([100.0, 100 * (2 * 0.5 + 1 * 0.0) / 3])
    assert s[1, 0] == 0.0 and math.isnan(s[1, 1])  # only the skipped query drawn
    assert s[2].tolist() == pytest.approx([100 * 2 / 3, 100 * 0.5 / 2])


def test_query_weights_are_resamples_and_deterministic():
    w = bootstrap.query_weights(50, 3)
    assert w.shape == (bootstrap.REPLICATES, 50) and (w.sum(1) == 50).all()
    assert (w == bootstrap.query_weights(50, 3)).all() and not (w == bootstrap.query_weights(50, 4)).all()


def test_query_interval_matches_the_normal_approximation():
    n, p = 2000, 0.3
    hits = np.zeros(n)
    hits[: int(n * p)] = 1.0
    reps = bootstrap.resampled_scores(hits, bootstrap.query_weights(n, 0))[:, 0]
    low, high = bootstrap.interval(reps)
    half = 100 * 1.96 * math.sqrt(p * (1 - p) / n)  # 2.01 points
    assert low == pytest.approx(100 * p - half, abs=0.35) and high == pytest.approx(100 * p + half, abs=0.35)


def test_seed_interval_is_the_t_interval_for_three_seeds_without_query_noise():
    # HBCT - hbct-no-entail P_com on ext-class, per seed: 0.348, 0.481, 0.057 (no query noise). By hand: mean
    # 0.2953, sample variance 0.094051 / 2 = 0.047025, SE 0.12520, t(0.975, 2) = 4.3027: [-0.2434, 0.8340].
    # Resampling the 3 seeds with replacement gave [0.037, 0.555]: "reproduced" on 3 seeds.
    values = [0.348, 0.481, 0.057]
    sample = bootstrap.over_seeds(values, [np.full(bootstrap.REPLICATES, v) for v in values], [0, 1, 2])
    low, high = bootstrap.interval(sample)
    assert (low, high) == pytest.approx((-0.2434, 0.8340), abs=5e-4)
    assert low < 0 < high


def test_seed_interval_never_narrower_than_the_within_seed_noise():
    # three seeds with identical point values 50 but query noise: the seeds' spread (0) cannot hide it. Each seed's
    # replicates are normal with sd 2 -> within variance 4, SE sqrt(4 / 3), half-width t(0.975, 2) * 1.1547 = 4.97
    rng = np.random.default_rng(0)
    per_seed = [50.0 + 2.0 * rng.standard_normal(20_000) for _ in range(3)]
    low, high = bootstrap.interval(bootstrap.over_seeds([50.0] * 3, per_seed, [0, 1, 2]))
    assert (low, high) == pytest.approx((50 - 4.97, 50 + 4.97), abs=0.1)
    # one seed: its query bootstrap's percentile interval (50 +- 1.96 * 2)
    low, high = bootstrap.interval(bootstrap.over_seeds([50.0], per_seed[:1], [0]))
    assert (low, high) == pytest.approx((50 - 3.92, 50 + 3.92), abs=0.1)


def test_a_bounded_statistic_keeps_its_interval_inside_its_range():
    # AC of three seeds 1, 1, 0.5 without query noise. By hand: mean 5/6, sample variance ((1/6)^2 * 2 + (1/3)^2) / 2
    # = 1/12, SE sqrt(1/12 / 3) = 1/6, t(0.975, 2) = 4.302653: 5/6 -+ 0.717109 = [0.116224, 1.550442]. AC cannot
    # exceed 1, so the interval is [0.116224, 1]; the unbounded one is unchanged.
    values = [1.0, 1.0, 0.5]
    sample = bootstrap.over_seeds(values, [np.full(bootstrap.REPLICATES, v) for v in values], [0, 1, 2])
    assert bootstrap.interval(sample) == pytest.approx((0.116224, 1.550442), abs=1e-6)
    assert bootstrap.interval(sample, bounds=(0.0, 1.0)) == pytest.approx((0.116224, 1.0), abs=1e-6)
    assert bootstrap.bounded((-3.0, 40.0), (0.0, 100.0)) == (0.0, 40.0)
    assert bootstrap.bounded((-1.5, 0.2), (-1.0, math.inf)) == (-1.0, 0.2)  # P_up >= -1, no upper bound
    assert all(math.isnan(v) for v in bootstrap.bounded((math.nan, math.nan), (0.0, 1.0)))


def test_table_intervals_of_accuracies_stay_in_0_100_and_exact_values_are_not_bold():
    from benchbackcompat.report.ranking import best_ids

    # one seed, 40 queries: old self 39 of 40, cross 40 of 40 (100%): its query bootstrap cannot leave [0, 100], and
    # P_up of a new model equal to its reference (self = ref self) is 0 in every resample: exact, never bold
    records = [_single("a", 0, 40, 39, 40, 40, 39, 40), _single("b", 0, 40, 30, 38, 36, 30, 40)]
    table = build_tables(records)[0]
    for row in table.rows:
        for column in table.columns:
            cell = row.cells[column.id]
            if isinstance(cell, Stat) and cell.interval and column.statistic.bounds == (0.0, 100.0):
                assert 0.0 <= cell.interval[0] <= cell.mean <= cell.interval[1] <= 100.0
    p_up = next(c for c in table.columns if c.id == "cmc@1:p_up")
    a, b = (next(r for r in table.rows if r.method == m) for m in "ab")
    assert a.cells[p_up.id].mean == 0.0 and a.cells[p_up.id].exact
    assert b.cells[p_up.id].mean == pytest.approx(-0.05) and not b.cells[p_up.id].exact
    assert "a" in {table.rows[i].method for i in best_ids(table, p_up)}  # a's exact 0 is the best mean: bold
    worse = [_single("a", 0, 40, 39, 38, 40, 39, 38), _single("b", 0, 40, 30, 39, 36, 30, 38)]
    table = build_tables(worse)[0]  # a: P_up exactly 0 below b's 1/38, not significantly worse, but not bold
    assert {table.rows[i].method for i in best_ids(table, p_up)} == {"b"}


def test_seed_difference_pairs_by_seed_and_skips_undefined_replicates():
    a = bootstrap.over_seeds([1.0, 2.0, 4.0], [np.full(10, 1.0), np.full(10, 2.0), np.full(10, 4.0)], [0, 1, 2])
    b = bootstrap.over_seeds([0.5, 3.5], [np.full(10, 0.5), np.full(10, np.nan)], [2, 0])
    d = a - b  # seeds 0 and 2 in common: 1 - 3.5, 4 - 0.5
    assert d.seeds == (0, 2) and d.values.tolist() == [-2.5, 3.5]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low, high = bootstrap.interval(d)  # seed 0's replicates are all NaN: no within-seed variance from it
    half = 12.7062 * 3.0  # t(0.975, 1) * s / sqrt(2), s = |(-2.5) - 3.5| / sqrt(2) = 4.243, s / sqrt(2) = 3
    assert (low, high) == pytest.approx((0.5 - half, 0.5 + half), abs=1e-3)


def test_significance_of_a_paired_difference():
    n = 600
    a = np.zeros(n)
    a[:300] = 1  # 50%
    b = a.copy()
    b[:30] = 0  # 45%: 30 fewer hits on the same queries
    c = np.roll(a, 150)  # 50% too, on other queries
    w = bootstrap.query_weights(n, 0)
    ra, rb, rc = (bootstrap.resampled_scores(x, w)[:, 0] for x in (a, b, c))
    assert bootstrap.significantly_worse(ra, rb)
    assert not bootstrap.significantly_worse(ra, rc) and not bootstrap.significantly_worse(rc, ra)
    assert not bootstrap.significantly_worse(ra, ra)
    assert bootstrap.significantly_worse(rb, ra, higher_is_better=False)


def test_batched_matrix_statistics_by_hand():
    C = np.array([[[50.0, 0, 0], [52.0, 60.0, 0], [49.0, 61.0, 70.0]]])
    stats = bootstrap.batched_matrix_statistics(C)
    # pairs (1,0): 52 > 50 yes; (2,0): 49 > 50 no; (2,1): 61 > 60 yes
    assert stats["AC"][0] == pytest.approx(2 / 3)
    assert stats["AA"][0] == pytest.approx((50 + 52 + 60 + 49 + 61 + 70) / 6)
    assert stats["ACA"][0] == pytest.approx((52 + 61) / 3)


def _hits(n: int, k: int) -> dict:
    values = np.zeros(n, dtype=bool)
    values[:k] = True
    return outcomes.encode(values)


def _single(method: str, seed: int, n: int, old: int, new: int, cross: int, ref_old: int, ref_new: int,
            chance: float = 5.0) -> dict:
    pct = lambda k: 100.0 * k / n  # noqa: E731
    assert ref_old == old  # P_com divides by the self-test of the cross-test's own gallery model (the old one)
    metrics = {"self": pct(new), "cross": pct(cross), "old_self": pct(old), "reference_self": pct(ref_new),
               "AA": 0.0, "AC": 0.0, "ACA": 0.0}
    metrics["p_com"] = (metrics["cross"] - metrics["old_self"]) / (metrics["reference_self"] - metrics["old_self"])
    metrics["p_up"] = (metrics["self"] - metrics["reference_self"]) / metrics["reference_self"]
    return {
        "status": "finished", "key": f"{method}{seed}", "label": f"ext-class/{method}/seed{seed}", "scenario": "ext-class",
        "kind": "ext-class", "dataset": "d",
        "preset": "p", "method": method, "params": {}, "seed": seed, "config": {"metrics": ["cmc@1"]},
        "metrics": {"cmc@1": metrics},
        "matrices": {"cmc@1": [[pct(old), None], [pct(cross), pct(new)]]},
        "outcomes": {"cmc@1": {"C": [[_hits(n, old), None], [_hits(n, cross), _hits(n, new)]],
                               "reference_self": _hits(n, ref_new)}},
        "chance": {"cmc@1": chance},
    }


def test_p_com_hidden_when_the_update_is_small_or_not_significant():
    # reference self 52% vs old self 50% on 400 queries: a 2-point update, below the minimum
    table = build_tables([_single("a", 0, 400, 200, 210, 204, 200, 208)])[0]
    cell = table.rows[0].cells["cmc@1:p_com"]
    assert cell.text == "–" and "reference self − old self = 2.00" in cell.reason
    # a 20-point update on 400 queries is decidable: P_com = (55 - 50) / (70 - 50) = 0.25
    table = build_tables([_single("a", 0, 400, 200, 280, 220, 200, 280)])[0]
    assert table.rows[0].cells["cmc@1:p_com"].mean == pytest.approx(0.25)
    low, high = table.rows[0].cells["cmc@1:p_com"].interval
    assert low < 0.25 < high
    hidden = undecidable_update(Stat((MIN_UPDATE_GAIN + 1,), np.array([-1.0, 1.0, 2.0] * 10)))
    assert hidden.reason.endswith("is not significantly positive") and hidden.word == "update not > 0"
    assert cell.word == f"update < {MIN_UPDATE_GAIN:g} pts"


def test_rank_follows_p_com_then_cross_and_chance_level_rows_are_not_ranked():
    n = 400
    records = [
        _single("good", 0, n, 200, 280, 250, 200, 280),   # P_com 0.625
        _single("fair", 0, n, 200, 280, 230, 200, 280),   # P_com 0.375, higher self does not matter
        _single("noise", 0, n, 8, 9, 9, 8, 80, chance=5.0),  # old self 2% < 2 x 5%: chance level
    ]
    table = build_tables(records)[0]
    ranks = {row.method: row.rank for row in table.rows}
    assert ranks == {"good": 1, "fair": 2, "noise": None}
    noise = next(r for r in table.rows if r.method == "noise")
    assert "chance level" in noise.chance


def test_bold_only_rows_not_significantly_worse_than_the_best():
    from benchbackcompat.report.ranking import best_ids

    n = 600
    records = [_single("best", 0, n, 300, 450, 420, 300, 450), _single("close", 0, n, 300, 450, 418, 300, 450),
               _single("worse", 0, n, 300, 450, 330, 300, 450)]
    table = build_tables(records)[0]
    cross = next(c for c in table.columns if c.id == "cmc@1:cross")
    bold = {table.rows[i].method for i in best_ids(table, cross)}
    assert bold == {"best", "close"}
    old = next(c for c in table.columns if c.id == "cmc@1:old_self")
    assert best_ids(table, old) == set()  # context columns are never bold


def _data(query_labels: list[int], gallery_labels: list[int] | None):
    from benchbackcompat.data.arrays import ImageArrays
    from benchbackcompat.scenarios.data import ScenarioData

    def arrays(labels):
        return ImageArrays(torch.zeros(len(labels), 3, 8, 8, dtype=torch.uint8), torch.tensor(labels))

    return ScenarioData(arrays([0]), arrays(query_labels), arrays(gallery_labels) if gallery_labels else None, None,
                        (0.5,) * 3, (0.25,) * 3, 8, 3, "hand")


def test_chance_levels_by_hand():
    from benchbackcompat.engine.evaluate import chance_level

    loo = _data([0, 0, 1, 1, 1], None)
    # leave-one-out: a class-0 query has 1 relevant item among 4 others, a class-1 query 2 of 4
    assert chance_level("cmc@1", "loo", loo) == pytest.approx(100 * (2 * 0.25 + 3 * 0.5) / 5)
    # CMC@2: one minus the chance that neither of two random items is relevant (with replacement)
    assert chance_level("cmc@2", "loo", loo) == pytest.approx(100 * (2 * (1 - 0.75**2) + 3 * (1 - 0.5**2)) / 5)
    assert chance_level("top1", "template", _data([0, 1], [0, 1, 2, 2])) == pytest.approx(100 / 3)
    assert chance_level("cmc@1", "nn", _data([0, 1], [0, 1, 2, 2])) == pytest.approx(25.0)
    assert chance_level("verification", "verification", loo) == 50.0


def test_seeds_that_draw_their_own_class_order_pool_into_one_table():
    def seeded(seed: int, order_by_seed: bool) -> dict:
        record = _single("a", seed, 400, 200, 280, 220, 200, 280)
        record["config"] = {"metrics": ["cmc@1"], "data": {"root": f"/data{seed}", "class_order_seed": seed,
                                                            "order_by_seed": order_by_seed}}
        return record

    [table] = build_tables([seeded(0, True), seeded(1, True)])  # the class order comes from each cell's seed
    assert table.variant == "" and [r.seed for r in table.rows[0].records] == [0, 1]
    tables = build_tables([seeded(0, False), seeded(1, False)])  # two fixed class orders: two configurations
    assert [t.variant for t in tables] == ["data.class_order_seed=0", "data.class_order_seed=1"]


def test_rows_that_no_row_beats_significantly_share_rank_one():
    # P_com (cross - 300) / 150 on 600 queries: best 0.800, close 0.787 (2 queries apart: not significant), worse
    # 0.200; best and close share rank 1, and worse is beaten by both: rank 1 + 2 = 3
    n = 600
    records = [_single("best", 0, n, 300, 450, 420, 300, 450), _single("close", 0, n, 300, 450, 418, 300, 450),
               _single("worse", 0, n, 300, 450, 330, 300, 450)]
    table = build_tables(records)[0]
    assert [(row.method, row.rank) for row in table.rows] == [("best", 1), ("close", 1), ("worse", 3)]
