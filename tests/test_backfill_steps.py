"""Backfilling curves along their steps: the stored per-step outcomes equal a brute-force mixed-gallery loop, the flips
along the curve end at the record's flip rates, the oracle order beats random on a constructed gallery, the random
order's permutations widen the area's interval, the literature's orders by hand, and old records read as before."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from benchbackcompat import geometry
from benchbackcompat.config import BackfillConfig
from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.engine.backfill import backfill_curves, further_permutations, refresh_orders
from benchbackcompat.engine.evaluate import evaluate_matrices
from benchbackcompat.engine.features import FeatureBank, ModelFeatures
from benchbackcompat.method import StandardMethod
from benchbackcompat.metrics import curve_steps, flips, live, outcomes, refresh
from benchbackcompat.record import parse_record
from benchbackcompat.scenarios.data import ScenarioData
from benchbackcompat.scenarios.kinds import ExtClass
from test_backfill import brute_force_hits

CLASSES, DIM = 4, 6
EVERY = ["random", "class-distance", "class-balanced", "uncertainty", "hbct-uncertainty", "learned", "oracle"]


def labelled(labels: torch.Tensor) -> ImageArrays:
    return ImageArrays(torch.zeros(len(labels), 1, 1, 1, dtype=torch.uint8), labels)


def random_setup(queries: int = 30, items: int = 22):
    """Two models of noisy class centres, query and gallery apart (protocol nn)."""
    ql, gl = torch.arange(queries) % CLASSES, torch.arange(items) % CLASSES
    data = ScenarioData(labelled(ql), labelled(ql), labelled(gl), None, (0.5,), (0.25,), 1, CLASSES, "synthetic")
    held = []
    for t in range(2):
        gen = torch.Generator().manual_seed(100 + t)
        centres = torch.randn(CLASSES, DIM, generator=gen)
        held.append(ModelFeatures(*(centres[y] + 1.2 * torch.randn(len(y), DIM, generator=gen) for y in (ql, gl))))
    return StandardMethod(), FeatureBank.in_memory(held), data


def test_stored_step_outcomes_equal_a_brute_force_loop():
    method, bank, data = random_setup()
    config = BackfillConfig(steps=4, orders=EVERY, permutations=3)
    [pair] = backfill_curves(method, bank, data, "nn", ["cmc@1"], 5, config)["pairs"]
    orders = refresh_orders(method, bank, data, 0, 5, EVERY, [0, 6, 11, 16, 22])  # 22 items in 4 batches
    drawn = further_permutations(len(data.gallery.labels), 5, 0, 3)
    stored = [(orders[name], pair["outcomes"]["cmc@1"][name]) for name in EVERY]
    stored += [(order, p["outcomes"]) for order, p in zip(drawn, pair["permutations"]["cmc@1"])]
    assert len(stored) == len(EVERY) + 2
    q, ql, gl = bank.query(1), data.query.labels, data.gallery.labels
    for order, steps in stored:
        assert len(steps) == 5
        for fraction, step in zip(pair["fractions"], steps):
            refreshed = torch.zeros(len(gl), dtype=torch.bool)
            refreshed[order[: round(fraction * len(gl))]] = True
            expected = brute_force_hits(q, bank.stored(0), q, bank.stored(1), refreshed, ql, gl)
            assert outcomes.decode(step).astype(bool).tolist() == expected
    old_self = brute_force_hits(bank.query(0), bank.stored(0), q, q, torch.zeros(len(gl), dtype=torch.bool), ql, gl)
    assert outcomes.decode(pair["old_self"]["cmc@1"]).astype(bool).tolist() == old_self


def test_flips_along_the_curve_end_at_the_records_flip_rates():
    method, bank, data = random_setup()
    pair = backfill_curves(method, bank, data, "nn", ["cmc@1"], 0, BackfillConfig(steps=4, orders=EVERY))["pairs"][0]
    matrices = evaluate_matrices(method, bank, data, "nn", ["cmc@1"], seed=0)
    [rates] = flips.pair_rates({"C": matrices.outcomes["cmc@1"]})
    old_self = outcomes.decode(pair["old_self"]["cmc@1"])
    for order, steps in pair["outcomes"]["cmc@1"].items():
        hits = curve_steps.decoded(steps)
        nfr, pfr = curve_steps.step_rates(old_self, hits)
        assert curve_steps.step_rates(hits[0], hits)[0][0] == 0  # the curve against its own start: nothing flips there
        assert (nfr[0], pfr[0]) == pytest.approx((rates["nfr_cross"], rates["pfr_cross"]))
        assert (nfr[-1], pfr[-1]) == pytest.approx((rates["nfr_self"], rates["pfr_self"]))
        # the stored curve is the mean of the stored hits, and the per-query areas average to its area
        assert 100 * hits.mean(1) == pytest.approx(pair["curves"]["cmc@1"][order])
        assert 100 * curve_steps.query_areas(pair["fractions"], hits).mean() == pytest.approx(pair["auc"]["cmc@1"][order])
    values = live.backfill_values({"pairs": [pair]}, None, "cmc@1")
    nfr_random = curve_steps.step_rates(old_self, curve_steps.decoded(pair["outcomes"]["cmc@1"]["random"]))[0]
    assert values["nfr_max_random"] == pytest.approx(max(nfr_random))


def constructed():
    """Six classes on the axes e_c of R^6; queries and the new gallery sit on their class's axis. The old gallery
    holds items 0-5, 18-23, 36-41, 54-59 (one of every class each) mis-embedded near the next class's axis
    (e_{c+1} + 0.2 e_c: cosine 0.98 to that class's queries), the others near their own (e_c + 0.3 e_{c+1}: 0.958), so
    every query's top-1 is a mis-embedded item of the previous class, and any refreshed item of its own class (on
    the axis: cosine 1) fixes all the queries of that class."""
    ql, gl = torch.arange(30) % 6, torch.arange(60) % 6
    axis = torch.eye(6)
    wrong = (torch.arange(60) // 6) % 3 == 0
    old = torch.where(wrong[:, None], axis[(gl + 1) % 6] + 0.2 * axis[gl], axis[gl] + 0.3 * axis[(gl + 1) % 6])
    data = ScenarioData(labelled(ql), labelled(ql), labelled(gl), None, (0.5,), (0.25,), 1, 6, "synthetic")
    bank = FeatureBank.in_memory([ModelFeatures(axis[ql], old), ModelFeatures(axis[ql], axis[gl])])
    return StandardMethod(), bank, data


def test_the_oracle_fixes_a_class_a_step_and_beats_random():
    method, bank, data = constructed()
    config = BackfillConfig(steps=60, orders=["random", "oracle"], permutations=5)
    [pair] = backfill_curves(method, bank, data, "nn", ["cmc@1"], 0, config)["pairs"]
    curve = pair["curves"]["cmc@1"]["oracle"]
    assert curve[:8] == pytest.approx([0.0, 100 / 6, 200 / 6, 50.0, 400 / 6, 500 / 6, 100.0, 100.0])
    oracle = refresh_orders(method, bank, data, 0, 0, ["oracle"], list(range(61)))["oracle"]
    assert sorted(data.gallery.labels[oracle[:6]].tolist()) == list(range(6))
    randoms = [pair["auc"]["cmc@1"]["random"], *(p["auc"] for p in pair["permutations"]["cmc@1"])]
    assert pair["auc"]["cmc@1"]["oracle"] > max(randoms)


def test_the_permutations_of_the_random_order():
    method, bank, data = random_setup(queries=60, items=40)
    one = backfill_curves(method, bank, data, "nn", ["cmc@1"], 2, BackfillConfig(steps=8, orders=["random"]))["pairs"][0]
    five = backfill_curves(method, bank, data, "nn", ["cmc@1"], 2,
                           BackfillConfig(steps=8, orders=["random"], permutations=5))["pairs"][0]
    assert "permutations" not in one
    assert five["curves"] == one["curves"]  # the first permutation is the one drawn without the option
    drawn = five["permutations"]["cmc@1"]
    areas = [five["auc"]["cmc@1"]["random"], *(p["auc"] for p in drawn)]
    assert len(areas) == 5 and len(set(areas)) > 1  # the order's randomness moves the area
    assert all(p["curve"][0] == one["curves"]["cmc@1"]["random"][0] for p in drawn)  # same ends, whatever the order
    assert all(p["curve"][-1] == one["curves"]["cmc@1"]["random"][-1] for p in drawn)
    assert live.backfill_values({"pairs": [five]}, None, "cmc@1")["auc_permutations_random"] == pytest.approx(
        sum(areas) / 5)


def test_bootstrap_over_permutations_by_construction():
    # every query alike within a permutation: resampling queries moves nothing, resampling permutations does
    areas = np.repeat(np.array([[0.2], [0.4], [0.6]]), 50, axis=1)
    mean, low, high = curve_steps.bootstrap_area(areas)
    assert mean == pytest.approx(40.0)
    assert 20.0 <= low < 40.0 < high <= 60.0
    assert curve_steps.bootstrap_area(areas[:1]) == pytest.approx((20.0, 20.0, 20.0))
    # one permutation of 0/1 areas: the interval is the bootstrap of a proportion around it
    mean, low, high = curve_steps.bootstrap_area(np.array([[1.0] * 30 + [0.0] * 70]))
    assert mean == pytest.approx(30.0) and 18.0 < low < 30.0 < high < 42.0


def test_query_areas_by_hand():
    steps = np.array([[0.0, 1.0, np.nan], [1.0, 1.0, np.nan], [1.0, 0.0, np.nan]])
    found = curve_steps.query_areas([0.0, 0.5, 1.0], steps)
    assert found[:2] == pytest.approx([0.75, 0.75]) and np.isnan(found[2])
    assert curve_steps.at_fraction([0.0, 0.5, 1.0], [10.0, 20.0, 40.0], 0.75) == pytest.approx(30.0)


def test_uncertainty_order_by_hand():
    # cosine templates of two classes: class 0 at (1, 0), class 1 at (0, 1); margins |cos to 0 − cos to 1|
    gallery = torch.tensor([[1.0, 0.1], [1.0, 0.9], [0.2, 1.0], [0.0, 1.0]])
    labels = torch.tensor([0, 0, 1, 1])
    templates = F.normalize(torch.stack([F.normalize(gallery[:2], dim=1).sum(0), F.normalize(gallery[2:], dim=1).sum(0)]),
                            dim=1)
    cos = F.normalize(gallery, dim=1) @ templates.T
    margins = (cos.max(1).values - cos.min(1).values).tolist()
    method = StandardMethod()
    order = refresh.uncertainty_order(gallery, labels, method.similarity(), method.templates())
    assert order.tolist() == sorted(range(4), key=lambda j: (margins[j], j))
    assert order[0] == 1  # the item between the classes


def test_hbct_uncertainty_is_one_minus_tanh_of_the_norm():
    z = torch.tensor([[0.0, 0.0], [0.3, 0.4], [3.0, 4.0], [0.1, 0.0]], dtype=torch.float64)
    for curvature in (1.0, 0.5):
        h = geometry.expmap0(z, curvature)
        expected = [1 - math.tanh(math.sqrt(curvature) * math.hypot(*row)) for row in z.tolist()]
        assert refresh.hyperbolic_uncertainty(h).tolist() == pytest.approx(expected, abs=1e-6)  # expmap0 in float32
    from bbc_hyperbolic.common import LorentzMethod

    method = LorentzMethod()
    order = refresh.hbct_uncertainty_order(geometry.expmap0(z), torch.tensor([0, 0, 1, 1]), method.similarity(),
                                           method.templates())
    assert order.tolist() == [0, 3, 1, 2]  # most uncertain (nearest the origin) first
    cosine = StandardMethod()  # off the hyperboloid: Hot-Refresh's uncertainty
    gallery = torch.tensor([[1.0, 0.1], [1.0, 0.9], [0.2, 1.0], [0.0, 1.0]])
    assert refresh.hbct_uncertainty_order(gallery, torch.tensor([0, 0, 1, 1]), cosine.similarity(),
                                          cosine.templates()).tolist() == \
        refresh.uncertainty_order(gallery, torch.tensor([0, 0, 1, 1]), cosine.similarity(), cosine.templates()).tolist()


def test_the_learned_order_recovers_a_linear_benefit():
    gen = torch.Generator().manual_seed(0)
    features = torch.randn(200, 5, generator=gen, dtype=torch.float64)
    benefit = features @ torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0], dtype=torch.float64) + 0.7
    order = refresh.learned_order(features, benefit, torch.Generator().manual_seed(1))
    assert order.tolist() == torch.sort(-benefit, stable=True).indices.tolist()


def test_permutations_are_keyed_only_when_set():
    assert "permutations" not in ExtClass(backfill={}).model_dump(mode="json")["backfill"]
    assert ExtClass(backfill={"permutations": 5}).model_dump(mode="json")["backfill"]["permutations"] == 5


OLD_PAIR = {"old": 0, "new": 1, "fractions": [0.0, 0.5, 1.0], "curves": {"cmc@1": {"random": [10.0, 20.0, 30.0]}},
            "auc": {"cmc@1": {"random": 20.0}}}


def test_a_record_without_step_outcomes_reads_and_dumps_as_before():
    record = parse_record({"key": "k", "label": "l", "scenario": "s", "kind": "ext-class", "method": "m", "seed": 0,
                           "status": "finished", "matrices": {"cmc@1": [[50.0, None], [40.0, 60.0]]},
                           "backfill": {"pairs": [OLD_PAIR]}})
    assert record.backfill == {"pairs": [OLD_PAIR]}
    assert set(live.backfill_values(record.backfill, record.matrices["cmc@1"], "cmc@1")) == {
        "auc_random", "dip_random", "dip_at_random"}


def _bits(values: list[int]) -> dict:
    return outcomes.encode(np.array(values, dtype=bool))


def test_the_pages_table_along_the_curve_by_hand(tmp_path):
    from types import SimpleNamespace

    from benchbackcompat.report.curve_steps import steps_figure, steps_markdown

    # 4 queries; the old self-test gets queries 0, 1 right. Steps at 0, 50, 100% refreshed: 0 and 2 right, then
    # 0, 2, 3, then all. NFR (right under old self, wrong at the step): query 1 at 0% and 50% -> 25, 25, 0;
    # PFR: query 2 at 0%, 2 and 3 at 50% and 100% -> 25, 50, 50. Per-query areas (trapezoid over 0, .5, 1):
    # 1, .25, 1, .75 -> 75%, the curve's area.
    steps = [_bits([1, 0, 1, 0]), _bits([1, 0, 1, 1]), _bits([1, 1, 1, 1])]
    pair = {"old": 0, "new": 1, "fractions": [0.0, 0.5, 1.0], "curves": {"cmc@1": {"oracle": [50.0, 75.0, 100.0]}},
            "auc": {"cmc@1": {"oracle": 75.0}}, "outcomes": {"cmc@1": {"oracle": steps}},
            "old_self": {"cmc@1": _bits([1, 1, 0, 0])}}
    table = SimpleNamespace(rows=[SimpleNamespace(label="bct", finished=[SimpleNamespace(seed=0, backfill={"pairs": [pair]})])],
                            title="t")
    line = next(x for x in steps_markdown(table, "cmc@1").splitlines() if x.startswith("| bct"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[0:2] == ["bct", "oracle"] and cells[2].startswith("75.0 [")
    assert cells[3] == "-"  # one permutation: no interval over permutations
    # NFR at 10% and 20% interpolate between 25 (0%) and 25 (50%); at 50% 25; max 25; PFR at 50% 50
    assert cells[4:] == ["25.0", "25.0", "25.0", "25.0", "50.0"]
    assert steps_figure(table, "cmc@1", tmp_path / "f.png").exists()
    old = SimpleNamespace(rows=[SimpleNamespace(label="bct", finished=[SimpleNamespace(seed=0, backfill={"pairs": [OLD_PAIR]})])],
                          title="t")
    assert steps_markdown(old, "cmc@1") == "" and steps_figure(old, "cmc@1", tmp_path / "g.png") is None


def test_the_greedy_oracle_by_a_brute_force_loop():
    method, bank, data = random_setup(queries=16, items=12)
    counts = [0, 3, 6, 9, 12]
    order = refresh_orders(method, bank, data, 0, 0, ["oracle"], counts)["oracle"].tolist()
    q, ql, gl = bank.query(1), data.query.labels, data.gallery.labels
    refreshed = torch.zeros(12, dtype=torch.bool)
    expected = []
    for done, target in zip(counts, counts[1:]):
        now = sum(brute_force_hits(q, bank.stored(0), q, bank.stored(1), refreshed, ql, gl))
        gains = {}
        for j in range(12):
            if not refreshed[j]:
                trial = refreshed.clone()
                trial[j] = True
                gains[j] = sum(brute_force_hits(q, bank.stored(0), q, bank.stored(1), trial, ql, gl)) - now
        batch = sorted(gains, key=lambda j: (-gains[j], j))[: target - done]
        expected += batch
        refreshed[batch] = True
    assert sorted(order) == list(range(12))
    assert order == expected


def test_the_learned_target_is_the_change_of_class_fit():
    # cosine, two classes; the class template of (1, 0), (1, 1) is their normalised sum of normalised features
    old = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
    new = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    labels = torch.tensor([0, 0, 1, 1])
    cosine = StandardMethod()
    gain = refresh.class_fit_gain(old, new, labels, cosine.similarity(), cosine.templates())
    unit = F.normalize(old, dim=1)
    template = F.normalize(unit[:2].sum(0), dim=0)
    fit = [float(unit[0] @ template), float(unit[1] @ template)]  # both sqrt((2 + sqrt 2) / 4) = 0.924
    assert gain.tolist() == pytest.approx([1 - fit[0], 1 - fit[1], 1 - fit[0], 1 - fit[1]], abs=1e-6)


def subset_minimum(q_old, g_old, q_new, g_new, ql, gl) -> list[float]:
    """Per query, the fewest refreshed items that make its top-1 right, over every subset of the gallery (inf where
    none does): the brute force :func:`refresh.least_refreshes` must equal."""
    items = len(g_old)
    best = [math.inf] * len(q_old)
    for mask in range(1 << items):
        refreshed = [bool(mask >> j & 1) for j in range(items)]
        size = sum(refreshed)
        for i, hit in enumerate(brute_force_hits(q_old, g_old, q_new, g_new, refreshed, ql, gl)):
            if hit:
                best[i] = min(best[i], size)
    return best


def test_the_least_refreshes_equal_a_search_over_every_subset():
    gen = torch.Generator().manual_seed(7)
    ql, gl = torch.arange(9) % 3, torch.arange(9) % 3
    q_old, g_old, q_new, g_new = (torch.randn(9, 4, generator=gen) for _ in range(4))
    cosine = StandardMethod().similarity()
    least = refresh.least_refreshes(cosine(q_old, g_old), cosine(q_new, g_new), ql, gl)
    expected = subset_minimum(q_old, g_old, q_new, g_new, ql, gl)
    assert least.tolist() == expected
    assert 0 < sum(0 < m < math.inf for m in expected) and math.inf in expected  # refreshes matter, and some query is lost


def test_the_oracle_bound_is_the_ceiling_of_every_orders_curve():
    method, bank, data = random_setup()
    config = BackfillConfig(steps=4, orders=[*EVERY, live.BOUND], permutations=3)
    [pair] = backfill_curves(method, bank, data, "nn", ["cmc@1", "map"], 5, config)["pairs"]
    curves = pair["curves"]["cmc@1"]
    bound = curves.pop(live.BOUND)
    drawn = [p["curve"] for p in pair["permutations"]["cmc@1"]]
    for curve in [*curves.values(), *drawn]:
        assert all(b >= c - 1e-9 for b, c in zip(bound, curve))
    assert bound[0] == pytest.approx(curves["random"][0])  # nothing refreshed: the cross-test
    assert bound[-1] >= curves["random"][-1]  # everything refreshed: the new self-test or above
    areas = pair["auc"]["cmc@1"]
    assert areas[live.BOUND] >= max(area for order, area in areas.items() if order != live.BOUND)
    assert live.BOUND not in pair["curves"]["map"]  # top-1 hits only
    assert list(pair["outcomes"]) == ["cmc@1"]  # per-step outcomes of hit metrics only
    steps = curve_steps.decoded(pair["outcomes"]["cmc@1"][live.BOUND])
    assert (100 * steps.mean(1)).tolist() == pytest.approx(bound)


def test_the_bound_is_not_an_order_on_its_own():
    with pytest.raises(ValueError, match="add one"):
        BackfillConfig(orders=[live.BOUND])
