"""Figure styling: a distinct colour for every method, and the scatter's compatibility threshold per method."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from matplotlib.collections import LineCollection

from benchbackcompat.report.aggregate import build_tables
from benchbackcompat.report.figures import method_style, scatter

FIXTURE = Path(__file__).parent / "fixtures" / "leaderboard_records.json"


def test_every_method_gets_its_own_colour_for_any_number_of_methods():
    for n in (3, 10, 11, 20, 21, 64):
        colours = [tuple(np.round(method_style(i, n)[0], 6)) for i in range(n)]
        assert len(set(colours)) == n, n


def test_scatter_draws_each_methods_own_old_self_test_as_its_threshold():
    records = json.loads(FIXTURE.read_text())
    for r in records:  # l2 trained against another old model: its threshold is 34, not the others' 30
        if r["scenario"] == "ext-class" and r["method"] == "l2":
            r["metrics"]["cmc@1"]["old_self"] = 34.0 + r["seed"] * 2  # mean 35 over seeds 0 and 1
    table = next(t for t in build_tables(records) if t.scenario == "ext-class")
    fig = scatter(table, "cmc@1")
    ax = fig.axes[0]
    thresholds = {}
    for segments in ax.collections:
        if isinstance(segments, LineCollection) and segments.get_linestyle()[0][1] is not None:  # dotted
            (start, end), = segments.get_segments()
            assert start[1] == end[1]
            thresholds[round((start[0] + end[0]) / 2, 6)] = start[1]
    # x = mean self-test of each method, y = its mean old self-test (fixture: independent 41, l2 37, flat 30)
    assert thresholds == {41.0: 30.0, 37.0: 35.0, 30.0: 30.0}
    hollow = {bar.get_label(): bar.lines[0].get_markerfacecolor() == "white" for bar in ax.containers}
    assert hollow["l2 (cross <= its old self)"] and not hollow["flat"]  # l2: cross 34 <= 35; flat: 31 > 30
