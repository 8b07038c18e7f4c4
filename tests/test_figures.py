"""Figure styling: a distinct colour for every method, and each method's compatibility margin against its own old model."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchbackcompat.report.aggregate import build_tables
from benchbackcompat.report.figures import margin_plot, margins, method_style

FIXTURE = Path(__file__).parent / "fixtures" / "leaderboard_records.json"


def test_every_method_gets_its_own_colour_for_any_number_of_methods():
    for n in (3, 10, 11, 20, 21, 64):
        colours = [tuple(np.round(method_style(i, n)[0], 6)) for i in range(n)]
        assert len(set(colours)) == n, n


def test_margin_is_cross_minus_each_methods_own_old_self_test():
    records = json.loads(FIXTURE.read_text())
    for r in records:  # l2 trained against another old model: its threshold is 34 + 2 x seed, not the others' 30
        if r["scenario"] == "ext-class" and r["method"] == "l2":
            r["metrics"]["cmc@1"]["old_self"] = 34.0 + r["seed"] * 2  # mean 35 over seeds 0 and 1
    table = next(t for t in build_tables(records) if t.scenario == "ext-class")
    found = {row.method: mean for row, mean, _ in margins(table, "cmc@1")}
    # cross means (fixture): l2 34, independent 11, flat 31; old self l2 35, others 30
    assert found == {"l2": -1.0, "independent": -19.0, "flat": 1.0}
    fig = margin_plot(table, "cmc@1")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [row.label for row in table.rows if row.method in found]
