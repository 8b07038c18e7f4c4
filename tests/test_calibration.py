"""The convergence check's intervals: a self-test's change between two training lengths, over seeds, against
hand-computed binomial quantiles, and the verdict the claims report prints from them."""
from __future__ import annotations

import json

import pytest

from benchbackcompat.errors import BenchError
from benchbackcompat.record import parse_record
from benchbackcompat.report.calibration import (BEYOND, UNDECIDED, WITHIN, ChangeInterval, change_intervals,
                                                convergence, read_calibrations)
from test_claims import _sequence


def _pair(given_hits: int, longer_hits: int, seed: int = 0, n: int = 1000):
    """One model's record as given and longer: the first ``given_hits`` / ``longer_hits`` of ``n`` queries hit."""
    return (parse_record(_sequence("independent", [[given_hits]], n=n, seed=seed)),
            parse_record(_sequence("independent", [[longer_hits]], n=n, seed=seed)))


def test_the_change_of_one_seed_has_the_binomial_interval_of_its_discordant_queries():
    # 700 -> 710 hits of 1,000: 10 queries differ, all in favour of the longer run. A resample of the queries
    # draws Binomial(1000, 0.01) of them: 2.5% and 97.5% quantiles 4 and 17, i.e. [+0.4, +1.7] points.
    (change,) = change_intervals([_pair(700, 710)], "cmc@1")
    assert (change.model, change.seeds, change.mean, change.queries) == ("model 0", [0], pytest.approx(1.0), 1000)
    assert 0.3 <= change.low <= 0.5 and 1.6 <= change.high <= 1.8
    assert change.verdict(2.0) == WITHIN
    # 600 -> 650: Binomial(1000, 0.05) quantiles 37 and 64, so [+3.7, +6.4] points: beyond 2
    (change,) = change_intervals([_pair(600, 650)], "cmc@1")
    assert 3.5 <= change.low <= 3.9 and 6.2 <= change.high <= 6.6
    assert change.verdict(2.0) == BEYOND


def test_the_change_is_averaged_over_seeds_with_their_spread():
    changes = change_intervals([_pair(700, 710, seed=0), _pair(700, 730, seed=1)], "cmc@1")
    (change,) = changes
    assert change.seeds == [0, 1] and change.mean == pytest.approx(2.0)  # (+1 + +3) / 2
    assert change.low < 2.0 < change.high and change.verdict(2.0) == UNDECIDED
    assert change.describe() == f"independent model 0 +2.0 [{change.low:+.1f}, {change.high:+.1f}]"


def test_a_change_measured_on_other_queries_is_refused():
    given, _ = _pair(700, 710)
    _, longer = _pair(700, 710, n=900)
    with pytest.raises(BenchError, match="different queries"):
        change_intervals([(given, longer)], "cmc@1")


@pytest.mark.parametrize("low, high, verdict", [(-2.0, 2.0, WITHIN), (-0.5, 1.9, WITHIN), (2.1, 4.0, BEYOND),
                                                (-5.0, -2.5, BEYOND), (1.0, 3.0, UNDECIDED), (-3.0, 3.0, UNDECIDED)])
def test_verdict_against_the_tolerance(low, high, verdict):
    change = ChangeInterval(scenario="s", method="m", model="model 0", seeds=[0], mean=(low + high) / 2,
                            low=low, high=high)
    assert change.verdict(2.0) == verdict


def test_the_claims_line_follows_the_intervals_where_the_summary_has_them(tmp_path):
    folder = tmp_path / "calibration"
    folder.mkdir()

    def summary(changes: list[tuple[str, float, float, float]]) -> dict:
        return {"preset": "p", "dataset": "d", "metric": "cmc@1", "epochs": [90, 135], "tolerance": 2.0,
                "command": "c", "cells": [{"scenario": "ext-class", "method": "independent", "seed": 0,
                                           "self_tests": {"model 0": [70.0, 72.5]}}],
                "changes": [{"scenario": "ext-class", "method": m, "model": "model 0", "seeds": [0, 1, 2],
                             "mean": mean, "low": low, "high": high} for m, mean, low, high in changes]}

    def line(changes):
        (folder / "cpu.json").write_text(json.dumps(summary(changes)))
        return convergence(read_calibrations([tmp_path]), "d", "p", "ext-class")

    # the single-seed point change (2.5 > 2) alone would say "no"; the interval over 3 seeds says undecidable
    assert line([("independent", 1.2, -0.4, 2.8)]) == (
        "training converged: undecidable (90 -> 135 epochs, mean change of each self-test over seed 0, 1, 2 with its "
        "95% interval against ±2 points; independent: undecided, model 0 +1.2 [-0.4, +2.8])")
    both_within = line([("independent", 0.5, -1.0, 1.9), ("hoc", -1.1, -1.8, -0.2)])
    assert both_within.startswith("training converged: yes (") and both_within.endswith(
        "against ±2 points; hoc: within, model 0 -1.1 [-1.8, -0.2]; independent: within, model 0 +0.5 [-1.0, +1.9])")
    # summaries that record the evaluation size name it
    summary_with_queries = summary([("independent", 1.2, 0.4, 1.9)])
    summary_with_queries["changes"][0]["queries"] = 5000
    (folder / "cpu.json").write_text(json.dumps(summary_with_queries))
    assert "over seed 0, 1, 2 (5,000 queries a seed) with its 95% interval" in convergence(
        read_calibrations([tmp_path]), "d", "p", "ext-class")
    # one method beyond decides "no", whatever the others; each method is named by its deciding change
    assert line([("independent", 0.5, -1.0, 1.9), ("hbct", 21.6, 17.6, 25.5), ("hbct", 1.0, 0.2, 1.8)]) == (
        "training converged: no (90 -> 135 epochs, mean change of each self-test over seed 0, 1, 2 with its 95% "
        "interval against ±2 points; hbct: beyond, model 0 +21.6 [+17.6, +25.5]; independent: within, "
        "model 0 +0.5 [-1.0, +1.9])")


def test_the_claims_line_judges_the_claims_own_methods(tmp_path):
    """HBCT's unconverged Lorentz models decide an HBCT claim, not a BCT one: a claim is judged on its calibrated
    methods, else on independent's models (BCT's old model and reference), and the line says so."""
    folder = tmp_path / "calibration"
    folder.mkdir()
    changes = [("independent", 0.4, -0.8, 1.4), ("hbct", 8.8, 7.8, 9.8)]
    (folder / "cpu.json").write_text(json.dumps({
        "preset": "p", "dataset": "d", "metric": "cmc@1", "epochs": [90, 135], "tolerance": 2.0, "command": "c",
        "cells": [{"scenario": "ext-class", "method": "independent", "seed": 0, "self_tests": {"model 0": [70.0, 70.4]}}],
        "changes": [{"scenario": "ext-class", "method": m, "model": "model 0", "seeds": [0, 1, 2], "mean": mean,
                     "low": low, "high": high} for m, mean, low, high in changes]}))
    calibrations = read_calibrations([tmp_path])
    listed = "hbct: beyond, model 0 +8.8 [+7.8, +9.8]; independent: within, model 0 +0.4 [-0.8, +1.4])"
    assert convergence(calibrations, "d", "p", "ext-class", ("bct",)) == (
        "training converged: yes (judged on independent; 90 -> 135 epochs, mean change of each self-test over seed "
        "0, 1, 2 with its 95% interval against ±2 points; " + listed)
    assert convergence(calibrations, "d", "p", "ext-class", ("hbct", "lce")).startswith(
        "training converged: no (judged on hbct; ")
    assert convergence(calibrations, "d", "p", "ext-class").startswith("training converged: no (90 -> 135 epochs")
