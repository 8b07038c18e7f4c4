"""The live-index tables' spread, by hand: the area under the backfilling curve per order with its t-interval over
seeds, the informed order against random paired by seed with the exact sign-flip p, and the index gap's interval."""
from __future__ import annotations

from types import SimpleNamespace

from benchbackcompat.report.upgrade import backfill_markdown, index_markdown

T2 = 4.302653  # t(0.975, 2 degrees of freedom)


def _record(seed: int, random_auc: float, informed_auc: float) -> SimpleNamespace:
    pair = {"old": 0, "new": 1, "fractions": [0.0, 1.0],
            "curves": {"cmc@1": {"random": [70.0, 90.0], "class-distance": [70.0, 90.0]}},
            "auc": {"cmc@1": {"random": random_auc, "class-distance": informed_auc}}}
    return SimpleNamespace(seed=seed, backfill={"pairs": [pair]})


def _table(rows: list[SimpleNamespace]) -> SimpleNamespace:
    return SimpleNamespace(rows=rows, title="ext-class")


def test_backfill_areas_carry_their_intervals_and_the_paired_order_difference():
    records = [_record(0, 80.0, 79.0), _record(1, 82.0, 80.0), _record(2, 84.0, 81.0)]
    text = backfill_markdown(_table([SimpleNamespace(label="bct", finished=records)]), "cmc@1")
    line = next(x for x in text.splitlines() if x.startswith("| bct"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    # random 80, 82, 84: mean 82, sd 2, half-width T2 * 2 / sqrt(3) = 4.97
    assert cells[2] == "82.0 [77.0, 87.0]"
    # class-distance 79, 80, 81: mean 80, sd 1, half-width 2.48
    assert cells[3] == "80.0 [77.5, 82.5]"
    # differences -1, -2, -3: mean -2, sd 1 -> [-4.5, +0.5]; all 8 sign flips, the observed and its mirror as extreme: 2/8
    assert cells[4] == "-2.0 [-4.5, +0.5], p 0.25"
    assert (cells[1], cells[5], cells[6]) == ("70.0", "90.0", "3")


def test_index_gap_carries_its_interval_over_seeds():
    def record(seed: int, through: float) -> SimpleNamespace:
        return SimpleNamespace(seed=seed, matrices={"cmc@1": [[80.0, None], [70.0, 82.0]]},
                               index={"matrices": {"ivf-pq": {"cmc@1": [[80.0, None], [through, 82.0]]}}})
    rows = [SimpleNamespace(label="l2", finished=[record(0, 69.0), record(1, 68.0), record(2, 67.0)])]
    line = next(x for x in index_markdown(_table(rows), "cmc@1").splitlines() if x.startswith("| l2"))
    cross, own = [c.strip() for c in line.split("|")[3:5]]
    # gaps 1, 2, 3 points: mean 2, sd 1 -> 2 +- 2.48; the self-tests go through unchanged
    assert cross == "70.0 / 68.0 / +2.0 [-0.5, +4.5]"
    assert own == "81.0 / 81.0 / +0.0 [+0.0, +0.0]"


def test_an_option_group_only_some_configurations_set_is_named_once_in_the_table_titles():
    from benchbackcompat.report.grouping import build_tables
    from test_statistics import _single

    def record(key: str, **config) -> dict:
        found = _single("l2", 0, 400, 200, 300, 240, 200, 300)
        found.update(key=key, config={"metrics": ["cmc@1"], **config})
        return found

    backfill = {"steps": 10, "orders": ["random", "class-distance"]}
    index = {"kinds": ["flat"], "nlist": 16}
    records = [record("a", train={"min_steps": 4000}, backfill=backfill, index=index),
               record("b", train={"min_steps": 4000}), record("c", train={"min_steps": 12000})]
    titles = sorted(t.title for t in build_tables(records))
    assert titles == ["ext-class (backfill, index, train.min_steps=4000)", "ext-class (train.min_steps=12000)",
                      "ext-class (train.min_steps=4000)"]
    # two settings of the group: its differing fields by name, as for any other field
    records.append(record("d", train={"min_steps": 4000}, backfill={**backfill, "steps": 5}, index=index))
    titles = sorted(t.title for t in build_tables(records))
    assert "ext-class (backfill.steps=5, index, train.min_steps=4000)" in titles
    assert "ext-class (backfill.steps=10, index, train.min_steps=4000)" in titles


EVERY_ORDER = ["random", "class-distance", "class-balanced", "uncertainty", "hbct-uncertainty", "learned", "oracle",
               "oracle-bound"]


def _many_orders(seed: int, random_auc: float, shifts: dict[str, float]) -> SimpleNamespace:
    areas = {order: random_auc + shifts.get(order, 0.0) for order in EVERY_ORDER}
    pair = {"old": 0, "new": 1, "fractions": [0.0, 1.0],
            "curves": {"cmc@1": {order: [70.0, 90.0] for order in EVERY_ORDER}}, "auc": {"cmc@1": areas}}
    return SimpleNamespace(seed=seed, backfill={"pairs": [pair]})


def test_many_orders_fit_one_compact_table_under_a_count_of_the_orders_against_random():
    bct = [_many_orders(0, 80.0, {"uncertainty": -1.0, "learned": 1.0}),
           _many_orders(1, 82.0, {"uncertainty": -2.0, "learned": 1.1}),
           _many_orders(2, 84.0, {"uncertainty": -3.0, "learned": 0.9})]
    hbct = [_many_orders(0, 60.0, {"uncertainty": -1.0, "learned": 0.5}),
            _many_orders(1, 61.0, {"uncertainty": -1.0, "learned": 0.4}),
            _many_orders(2, 62.0, {"uncertainty": -1.0, "learned": 0.6})]
    text = backfill_markdown(_table([SimpleNamespace(label="bct", finished=bct),
                                     SimpleNamespace(label="hbct", finished=hbct)]), "cmc@1")
    table_rows = [line for line in text.splitlines() if line.startswith("|")]
    assert all(len(line) <= 160 for line in table_rows)
    compact = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in table_rows
               if line.count("|") == len(EVERY_ORDER) + 5}
    # columns: 0%, the 8 orders, 100%, seeds. bct: uncertainty -1, -2, -3 -> -2.0 [-4.5, +0.5], no dagger; learned
    # +1.0, +1.1, +0.9 -> +1.0 with sd 0.1, half-width 0.25: excludes 0
    assert compact["bct"][1:4] == ["82.0", "82.0 +0.0", "82.0 +0.0"]
    assert compact["bct"][4] == "80.0 -2.0" and compact["bct"][6] == "83.0 +1.0†"
    assert compact["hbct"][4] == "60.0 -1.0†" and compact["hbct"][6] == "61.5 +0.5†"
    assert "uncertainty: above random for 0 of 2 methods (0 with a t-interval above 0), below for 2 (1 below 0)" in text
    assert "learned: above random for 2 of 2 methods (2 with a t-interval above 0), below for 0 (0 below 0)" in text
    assert "class-distance: above random for 0 of 2 methods (0 with a t-interval above 0), below for 0" in text
    spelled = next(line for line in table_rows if line.startswith("| bct ") and "| uncertainty " in line)
    assert "-2.0 [-4.5, +0.5], p 0.25" in spelled  # the interval, in the collapsed table
    assert "<details>" in text and "c-dist: class-distance" in text
